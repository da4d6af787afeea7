import { type Feature, FEATURES } from './feature.probes';

/** One system of the A/B: the service with one feature switched off (or none: {@link ALL_ON}). */
export interface AbVariant {
  /** For `--ab-variants` and the JSON, e.g. `metrics`. */
  name: string;
  /** The table's row, e.g. `Metrics`. */
  feature: string;
  /** How it is switched off: the export replaced and what replaces it. */
  how: string;
  /** The preload, by its built file under dist/bench/ab/ (`NODE_OPTIONS=--require`); none for all on. */
  preload?: string;
  /** Added to the service's environment. */
  env?: Record<string, string>;
  /** The features its probes must find off; every other one must be on. */
  off: readonly Feature[];
  /** For a control of the method itself, not a feature: the saving it must come out as, ms per request. */
  control?: { expectedSavedMs: number };
}

/**
 * The service as `npm start` runs it: every feature on, checked by every probe. Compared with the `none` control when that
 * runs (bench/ab.report.ts `referenceOf`), it is a control too: the same service without a preload, expected to cost the same.
 */
export const ALL_ON: AbVariant = {
  name: 'all-on',
  feature: 'All on, without a preload',
  how: 'the service as `npm start` runs it',
  off: [],
  control: { expectedSavedMs: 0 },
};

/**
 * Every variant, one feature off each, in the table's order (bench/README.md "Per-request cost"),
 * then the two controls of the method: one that changes nothing (its saving is the method's noise)
 * and one that costs a known 20 µs more per response (its saving must come out as -0.020 ms).
 */
export const AB_VARIANTS: readonly AbVariant[] = [
  {
    name: 'request-log',
    feature: 'Request log',
    how: '`RequestLogController.prototype.requestCompleted` a no-op (log level stays `info`)',
    preload: 'request-log.preload.js',
    off: ['requestLog'],
  },
  {
    name: 'metrics',
    feature: 'Metrics',
    how: '`createMetrics()` with `observeRequest` and `countDeprecatedCall` no-ops',
    preload: 'metrics.preload.js',
    off: ['metrics'],
  },
  {
    name: 'rate-limit',
    feature: 'Rate limit',
    how: '`createRateLimiter()` admitting every charge uncounted, no status (API key check kept)',
    preload: 'rate-limit.preload.js',
    off: ['rateLimit'],
  },
  {
    name: 'security-headers',
    feature: 'Security headers',
    how: '`hardenResponses()` registering nothing',
    preload: 'security-headers.preload.js',
    off: ['securityHeaders'],
  },
  {
    name: 'json-newline',
    feature: 'Newline hook',
    how: '`endJsonWithNewline()` registering nothing',
    preload: 'json-newline.preload.js',
    off: ['jsonNewline'],
  },
  {
    name: 'validation',
    feature: 'Validation',
    how: '`validateInput()` building the instance (defaults kept) without checks or class-validator',
    preload: 'validation.preload.js',
    off: ['validation'],
  },
  {
    name: 'database-deadline',
    feature: "The deadline's query runner",
    how: '`withinDeadline()` running `work(dataSource.manager)` (or `dataSource.transaction`)',
    preload: 'database-deadline.preload.js',
    off: ['databaseDeadline'],
  },
  {
    name: 'cursor-hash',
    feature: "The cursor's hash",
    how: '`encodePetCursor()`/`decodePetCursor()` without the SHA-256 checksum',
    preload: 'cursor-hash.preload.js',
    off: ['cursorHash'],
  },
  {
    name: 'apollo-plugins',
    feature: 'Our Apollo plugins, all',
    how: 'cost limit, operation summary, legacy JSON status, unavailable status: empty plugins; Armor: no plugin',
    preload: 'apollo-plugins.preload.js',
    off: ['apolloPlugins', 'costLimitPlugin'],
  },
  {
    name: 'cost-limit-plugin',
    feature: 'The cost-limit plugin alone',
    how: '`costLimitPlugin()` an empty plugin',
    preload: 'cost-limit-plugin.preload.js',
    off: ['costLimitPlugin'],
  },
  {
    name: 'apollo-fastify',
    feature: "Apollo's Fastify integration",
    how: '`fastifyApolloHandler()` returning a handler that calls `executeHTTPGraphQLRequest` with 5 headers and the sliced query string',
    preload: 'apollo-fastify.preload.js',
    off: ['apolloFastify'],
  },
  {
    name: 'all-features',
    feature: 'Every feature, all off together',
    how: 'every preload of the variants above at once (`all-features.preload.js`); the API key check stays',
    preload: 'all-features.preload.js',
    off: FEATURES.filter((feature) => feature !== 'apiKeyCheck'),
  },
  {
    name: 'none',
    feature: 'Control: nothing off',
    how: 'a preload that replaces nothing',
    preload: 'control-none.preload.js',
    off: [],
    control: { expectedSavedMs: 0 },
  },
  {
    name: 'burn-20us',
    feature: 'Control: 20 µs spent more',
    how: "`endJsonWithNewline()`'s onSend hook spinning 20 µs first, every response",
    preload: 'control-burn.preload.js',
    off: [],
    control: { expectedSavedMs: -0.02 },
  },
];
