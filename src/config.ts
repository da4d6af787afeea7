import { isIP } from 'node:net';
import path from 'node:path';
import { bool, cleanEnv, host, makeValidator, port, str } from 'envalid';
import { keyChangeChannelName } from './auth/key-change.channel';
import type { DatabaseConfig } from './database/database-config';
import type { RateLimitConfig } from './guard/rate-limiter';
import { LOG_LEVELS } from './observability/log-levels';
import { REDIS_FAILURE_POLICIES, type RedisFailurePolicy } from './observability/redis-health.monitor';
import { parsePositiveInteger } from './validation/positive-integer';
import { WEBHOOK_RETRY_SCHEDULE_SECONDS } from './webhooks/retry-schedule';
import { API_KEY_CACHE, DATABASE_DEADLINES } from './limits';
import { findMisspeltVariables } from './validation/misspelt-variables';

/** Parses an absolute URL whose scheme is one of `schemes`; the error shows `example`. */
function parseUrl(input: string, schemes: readonly string[], example: string): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new Error(`must be a URL such as ${example}`);
  }
  if (!schemes.includes(url.protocol)) throw new Error(`must be a URL such as ${example}`);
  return url;
}

const redisUrl = makeValidator<string>((input) => {
  parseUrl(input, ['redis:', 'rediss:'], 'redis://host:6379');
  return input;
});

const positiveInteger = makeValidator<number>((input) => {
  const value = parsePositiveInteger(input);
  if (value === undefined) throw new Error('must be a positive integer');
  return value;
});

const nonNegativeInteger = makeValidator<number>((input) => {
  const value = input === '0' ? 0 : parsePositiveInteger(input);
  if (value === undefined) throw new Error('must be 0 or a positive integer');
  return value;
});

const trustProxy = makeValidator<false | number | string[]>((input) => {
  const hops = parsePositiveInteger(input);
  if (hops !== undefined) return hops;
  const entries = input
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address, prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || rest.length > 0) {
      throw new Error(`${entry} is not a hop count, an IP address or a CIDR range such as 10.0.0.0/8`);
    }
  }
  return entries.length > 0 ? entries : false;
});

/** Its message names every bad key. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** METRICS_PORT, when unset, is PORT plus this: 9464 (Prometheus exporters' customary port) for PORT 3000. */
export const METRICS_PORT_OFFSET = 6464;

/** Relative to the working directory. */
export const EMBEDDED_DATABASE_PATH = path.join('data', 'petstore.sqlite');

/** Relative to the working directory (docs/api-keys.md "The development key"). */
export const DEV_API_KEY_PATH = path.join('data', 'dev-api-key');

function checkMysqlUrl(input: string): string {
  const url = parseUrl(input, ['mysql:'], 'mysql://user:pass@host:3306/db');
  if (url.pathname.length <= 1) throw new Error('must name a database, as in mysql://user:pass@host:3306/db');
  return input;
}

const mysqlUrl = makeValidator<string>(checkMysqlUrl);

const mysqlUrlList = makeValidator<string[]>((input) => {
  const urls = input
    .split(',')
    .map((url) => url.trim())
    .filter(Boolean);
  return urls.map(checkMysqlUrl);
});

const baseUrl = makeValidator<string>((input) => {
  const url = parseUrl(input, ['http:', 'https:'], 'https://api.example.com/v1');
  if (!url.pathname.replace(/\/$/, '').endsWith('/v1')) {
    throw new Error('must be an http(s) URL whose path ends in /v1');
  }
  return input.replace(/\/$/, '');
});

const originList = makeValidator<string[]>((input) => {
  const origins = input
    .split(',')
    .map((origin) => origin.trim())
    .filter(Boolean);
  for (const origin of origins) {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new Error(`${origin} is not an origin such as https://app.example.com`);
    }
    if (url.origin !== origin) throw new Error(`${origin} is not an origin (scheme://host[:port], no path)`);
  }
  return origins;
});

/** Redis (`REDIS_URL`), shared by every instance: where it is, what to do while it is away, and the names this service uses in it. */
export interface RedisConfig {
  /** Unset: every instance alone (in-memory rate limits, no pokes or key change announcements). */
  readonly url?: string;
  readonly onFailure: RedisFailurePolicy;
  /** Pub/sub channel of API key changes (docs/api-keys.md "Revocation"). */
  readonly keyChangesChannel: string;
  /** Pub/sub channel of the change feed's pokes (docs/events.md "How it works"). */
  readonly petFeedChannel: string;
}

/** Comma-separated manifest paths; read by what uses them (the GraphQL surface), when the service starts. */
const pathList = makeValidator<readonly string[]>((input) =>
  Object.freeze(
    input
      .split(',')
      .map((file) => file.trim())
      .filter(Boolean),
  ),
);

/** A name or prefix in Redis: anything but empty, which would let deployments sharing a Redis share counters and channels. */
const redisName = makeValidator<string>((input) => {
  if (input.trim() === '') throw new Error('must not be empty: deployments sharing a Redis would share its counters and channels');
  return input;
});

/**
 * A retry schedule: comma-separated delays in seconds (fractions allowed), at least one, the first 0: as in Standard
 * Webhooks' schedule, the first attempt goes at once, and each later entry is a retry's delay after the previous failure.
 */
const retrySchedule = makeValidator<readonly number[]>((input) => {
  const entries = input.split(',').map((entry) => entry.trim());
  const delays = entries.map((entry) => (/^\d+(\.\d+)?$/.test(entry) ? Number(entry) : NaN));
  if (delays.some((delay) => !Number.isFinite(delay))) throw new Error('must be comma-separated seconds, e.g. 0,5,300');
  if (delays[0] !== 0) throw new Error(`must start with 0 (the first attempt goes at once; the retries' delays follow), e.g. 0,${entries.join(',')}`);
  return Object.freeze(delays);
});

/** The environment the service reads (docs/configuration.md), each variable's rule, default and meaning written once. */
export const CONFIG_SPEC = Object.freeze({
  PORT: port({ default: 3000, desc: 'TCP port the HTTP server listens on.' }),
  HOST: host({ default: '127.0.0.1', desc: 'Interface the HTTP server binds to; 0.0.0.0 in containers.' }),
  DATABASE_URL: mysqlUrl({
    default: undefined,
    desc: `The MySQL database; unset: the embedded SQLite file ${EMBEDDED_DATABASE_PATH} (relative to the working directory).`,
    example: 'mysql://user:pass@host:3306/db',
  }),
  EMBEDDED_DATABASE: bool({
    default: false,
    desc:
      `true: run on the embedded SQLite file ${EMBEDDED_DATABASE_PATH} on purpose. Outside production it is used anyway when DATABASE_URL is unset; ` +
      'in production one of the two must be set, or the service refuses to start.',
  }),
  NODE_ENV: str({
    choices: ['development', 'test', 'production'] as const,
    default: 'development',
    desc: 'production never creates a development key and hides GraphQL field suggestions.',
  }),
  LOG_LEVEL: str({ choices: LOG_LEVELS, default: 'info', desc: 'pino level of the JSON log lines.' }),
  PUBLIC_BASE_URL: baseUrl({
    default: undefined,
    desc: 'Production base address, listed as an OpenAPI server after this server (spec "Versioning").',
    example: 'https://api.example.com/v1',
  }),
  STAGING_BASE_URL: baseUrl({ default: undefined, desc: 'Staging base address, listed the same way.', example: 'https://staging.example.com/v1' }),
  CORS_ORIGINS: originList({
    default: [],
    desc: 'Comma-separated browser origins allowed by CORS; none (CORS closed) by default.',
    example: 'https://app.example.com',
  }),
  TRUST_PROXY: trustProxy({
    default: false,
    desc: "Which proxies in front may set X-Forwarded-For (Fastify's trustProxy): a hop count or comma-separated addresses and CIDR ranges; none by default.",
    example: '1',
  }),
  RATE_LIMIT_MAX: positiveInteger({ default: 600, desc: 'Requests per window for one API key.' }),
  RATE_LIMIT_UNAUTHENTICATED_MAX: positiveInteger({
    default: 60,
    desc: 'Requests per window for one IP address without a valid key.',
  }),
  RATE_LIMIT_WINDOW_SECONDS: positiveInteger({ default: 60, desc: 'The rate-limit window, in seconds.' }),
  REDIS_URL: redisUrl({
    default: undefined,
    desc: "Rate-limit counters, the change feed's pokes and API key revocations shared by every instance; in memory when unset.",
    example: 'redis://host:6379',
  }),
  REDIS_NAMESPACE: redisName({
    default: 'petstore:',
    desc:
      'Prefix of everything this service keeps in Redis: rate-limit counters (`<namespace>rate-limit:`), the API key changes channel ' +
      "(`<namespace>api-key-changes`) and the change feed's pokes (`<namespace>pet-feed`); one per deployment sharing a Redis.",
  }),
  PET_EVENTS_CHANNEL: redisName({
    default: undefined,
    desc: "Deprecated (use REDIS_NAMESPACE; removed in the next release): the change feed's pokes channel, instead of `<REDIS_NAMESPACE>pet-feed`.",
  }),
  RATE_LIMIT_ON_REDIS_FAILURE: str({
    choices: REDIS_FAILURE_POLICIES,
    default: 'serve-local',
    desc:
      'With REDIS_URL, while Redis is away: serve-local (each instance counts rate limits alone, /readyz stays 200) ' +
      'or refuse (rate-limited calls answer 503 and /readyz 503 until it is back).',
  }),
  RATE_LIMIT_NAMESPACE: redisName({
    default: undefined,
    desc:
      "Deprecated (use REDIS_NAMESPACE; removed in the next release): the rate-limit counters' prefix and the API key changes channel's, " +
      'instead of `<REDIS_NAMESPACE>rate-limit:` and `<REDIS_NAMESPACE>`.',
  }),
  DATABASE_REPLICA_URLS: mysqlUrlList({
    default: [],
    desc: 'Comma-separated read replicas (SELECTs outside transactions go there); needs DATABASE_URL, the primary.',
    example: 'mysql://user:pass@replica:3306/db',
  }),
  DATABASE_REPLICA_MAX_LAG_SECONDS: nonNegativeInteger({
    default: DATABASE_DEADLINES.replicaMaxLagSeconds,
    desc:
      'A read replica further behind its source than this (or whose replication is stopped) leaves the read rotation until it catches up; ' +
      'reads go to the primary meanwhile (checked every second).',
  }),
  DATABASE_CONNECT_ATTEMPTS: positiveInteger({
    default: 5,
    desc: 'How many times start-up tries to reach the database (with doubling pauses from 0.5 s) before it gives up.',
  }),
  DATABASE_MIGRATE_ON_START: bool({ default: true, desc: 'Whether start-up applies pending migrations (under the migration lock).' }),
  DATABASE_SLOW_STATEMENT_MS: positiveInteger({
    default: DATABASE_DEADLINES.slowQueryMs,
    desc: 'A statement taking longer, in milliseconds, is logged at warn with its request id and, with tracing on, its trace id (docs/operations.md "Logs").',
  }),
  API_KEY_CACHE_SECONDS: nonNegativeInteger({
    default: API_KEY_CACHE.ttlMs / 1000,
    desc:
      "How long a key lookup's answer (found active, or unknown/revoked) is reused without asking the database (0: always ask); " +
      'bounds how late a revocation made by another process takes effect here.',
  }),
  TRUSTED_DOCUMENTS: pathList({
    default: undefined,
    desc:
      'Comma-separated trusted document manifests (Apollo persisted query manifests or graphql-codegen persisted-documents.json), ' +
      'relative to the working directory, read at start: the only documents a publishable key may run (docs/api-keys.md "Trusted documents").',
    example: 'persisted-query-manifest.json',
  }),
  METRICS_PORT: port({
    default: undefined,
    desc:
      'Port of the Prometheus endpoint /metrics, a listener of its own (docs/operations.md "Endpoints"); not PORT. ' +
      `Unset: PORT + ${METRICS_PORT_OFFSET} (9464 with the default PORT), so that each instance started with its own PORT gets its own metrics port.`,
  }),
  METRICS_HOST: host({ default: undefined, desc: 'Interface of the metrics listener; HOST when unset.' }),
  SHUTDOWN_DRAIN_SECONDS: nonNegativeInteger({
    default: 0,
    desc: 'After SIGTERM/SIGINT, how long /readyz fails before the server stops accepting, so load balancers move away.',
  }),
  SHUTDOWN_GRACE_SECONDS: positiveInteger({
    default: 10,
    desc: 'Then, how long in-flight requests may take to finish once the server stops accepting.',
  }),
  WEBHOOK_ALLOW_HTTP: bool({
    default: false,
    desc: 'Whether webhook endpoints may have http URLs (development only: refused with NODE_ENV=production); https only otherwise.',
  }),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: bool({
    default: false,
    desc: 'Whether webhooks may go to loopback, private, link-local and other non-public addresses (development and tests only: refused with NODE_ENV=production).',
  }),
  WEBHOOK_RETRY_SCHEDULE: retrySchedule({
    default: WEBHOOK_RETRY_SCHEDULE_SECONDS,
    desc: "Comma-separated seconds before each attempt of a webhook delivery: 0 for the first attempt (at once), then each retry's delay after the previous failure; after the last, the endpoint is disabled. Default: Standard Webhooks' schedule.",
    example: '0,5,300',
  }),
  WEBHOOK_DELIVERIES: bool({ default: true, desc: 'Whether this instance delivers webhooks (every instance may; one at a time delivers to each endpoint).' }),
});

/**
 * Reads {@link CONFIG_SPEC} from `env`, then the rules between variables (docs/configuration.md "Production"): in
 * production an explicit database and no misspelt variable. Outside production a misspelt variable is only returned,
 * in `misspeltVariables`, for start-up to warn about.
 * @throws ConfigError naming every bad key at once, in one line.
 */
export function loadConfig(env: NodeJS.ProcessEnv) {
  const clean = cleanEnv(env, CONFIG_SPEC, {
    reporter: ({ errors }) => {
      const bad = Object.entries(errors).map(([key, error]) => `${key}: ${error.message}`);
      if (bad.length > 0) throw new ConfigError(`Invalid configuration: ${bad.join('; ')}`);
    },
  });
  const metricsPort = clean.METRICS_PORT ?? clean.PORT + METRICS_PORT_OFFSET;
  const production = clean.NODE_ENV === 'production';
  const misspelt = findMisspeltVariables(env, Object.keys(CONFIG_SPEC));
  const crossChecks = [
    ...(production ? misspelt.map((variable) => variable.message) : []),
    production &&
      !clean.DATABASE_URL &&
      !clean.EMBEDDED_DATABASE &&
      `DATABASE_URL: NODE_ENV=production needs an explicit database: set DATABASE_URL, or EMBEDDED_DATABASE=true to run on the embedded file ${EMBEDDED_DATABASE_PATH}`,
    clean.DATABASE_URL && clean.EMBEDDED_DATABASE && 'EMBEDDED_DATABASE: set it or DATABASE_URL, not both',
    metricsPort === clean.PORT && 'METRICS_PORT: must differ from PORT',
    metricsPort > 65535 && `METRICS_PORT: unset, it would be PORT + ${METRICS_PORT_OFFSET} = ${metricsPort}, past 65535: set it`,
    clean.DATABASE_REPLICA_URLS.length > 0 && !clean.DATABASE_URL && 'DATABASE_REPLICA_URLS: needs DATABASE_URL (the primary)',
    clean.NODE_ENV === 'production' && clean.WEBHOOK_ALLOW_HTTP && 'WEBHOOK_ALLOW_HTTP: refused with NODE_ENV=production',
    clean.NODE_ENV === 'production' && clean.WEBHOOK_ALLOW_PRIVATE_TARGETS && 'WEBHOOK_ALLOW_PRIVATE_TARGETS: refused with NODE_ENV=production',
  ].filter((problem): problem is string => typeof problem === 'string');
  if (crossChecks.length > 0) throw new ConfigError(`Invalid configuration: ${crossChecks.join('; ')}`);
  const database: DatabaseConfig = clean.DATABASE_URL
    ? {
        type: 'mysql',
        url: clean.DATABASE_URL,
        ...(clean.DATABASE_REPLICA_URLS.length > 0 && {
          replicaUrls: Object.freeze([...clean.DATABASE_REPLICA_URLS]),
          replicaMaxLagSeconds: clean.DATABASE_REPLICA_MAX_LAG_SECONDS,
        }),
      }
    : { type: 'sqlite', path: path.resolve(EMBEDDED_DATABASE_PATH) };
  const namespace = clean.REDIS_NAMESPACE;
  const rateLimit: RateLimitConfig = {
    max: clean.RATE_LIMIT_MAX,
    unauthenticatedMax: clean.RATE_LIMIT_UNAUTHENTICATED_MAX,
    windowSeconds: clean.RATE_LIMIT_WINDOW_SECONDS,
    counterPrefix: clean.RATE_LIMIT_NAMESPACE ?? `${namespace}rate-limit:`,
  };
  const redis: RedisConfig = {
    ...(clean.REDIS_URL && { url: clean.REDIS_URL }),
    onFailure: clean.RATE_LIMIT_ON_REDIS_FAILURE,
    keyChangesChannel: keyChangeChannelName(clean.RATE_LIMIT_NAMESPACE ?? namespace),
    petFeedChannel: clean.PET_EVENTS_CHANNEL ?? `${namespace}pet-feed`,
  };
  const deprecated = (['RATE_LIMIT_NAMESPACE', 'PET_EVENTS_CHANNEL'] as const)
    .filter((name) => env[name] !== undefined)
    .map((name) => ({ name, message: `${name} is deprecated and removed in the next release: set REDIS_NAMESPACE instead (docs/configuration.md)` }));
  return Object.freeze({
    port: clean.PORT,
    host: clean.HOST,
    nodeEnv: clean.NODE_ENV,
    logLevel: clean.LOG_LEVEL,
    database: Object.freeze(database),
    trustProxy: Array.isArray(clean.TRUST_PROXY) ? Object.freeze([...clean.TRUST_PROXY]) : clean.TRUST_PROXY,
    corsOrigins: Object.freeze([...clean.CORS_ORIGINS]),
    rateLimit: Object.freeze(rateLimit),
    redis: Object.freeze(redis),
    metrics: Object.freeze({ port: metricsPort, host: clean.METRICS_HOST ?? clean.HOST }),
    shutdown: Object.freeze({ drainSeconds: clean.SHUTDOWN_DRAIN_SECONDS, graceSeconds: clean.SHUTDOWN_GRACE_SECONDS }),
    databaseConnectAttempts: clean.DATABASE_CONNECT_ATTEMPTS,
    migrateOnStart: clean.DATABASE_MIGRATE_ON_START,
    slowStatementMs: clean.DATABASE_SLOW_STATEMENT_MS,
    apiKeyCacheSeconds: clean.API_KEY_CACHE_SECONDS,
    trustedDocumentManifests: clean.TRUSTED_DOCUMENTS ?? Object.freeze([]),
    misspeltVariables: Object.freeze(misspelt),
    /** Variables still read under an old name: start-up warns once of each. */
    deprecatedVariables: Object.freeze(deprecated),
    /** OpenTelemetry's own variables (OTEL_*), read here and nowhere else of ours; the SDK's exporters read theirs too. */
    tracing: Object.freeze(Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith('OTEL_')))),
    webhooks: Object.freeze({
      deliveries: clean.WEBHOOK_DELIVERIES,
      allowHttp: clean.WEBHOOK_ALLOW_HTTP,
      allowPrivateTargets: clean.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      retrySchedule: clean.WEBHOOK_RETRY_SCHEDULE,
    }),
    ...(clean.PUBLIC_BASE_URL && { publicBaseUrl: clean.PUBLIC_BASE_URL }),
    ...(clean.STAGING_BASE_URL && { stagingBaseUrl: clean.STAGING_BASE_URL }),
  });
}

/** The variables of {@link CONFIG_SPEC}, grouped as the modules that use them take them. */
export type Config = ReturnType<typeof loadConfig>;
