import type { Measurement, RunningSystem } from './bench.runner';
import { ALL_ON, type FeatureSwitches } from './production-features';
import { interleavedRounds } from './interleaved-rounds';
import type { Scenario } from './scenarios';

/** One set-up of the features phase: the production set-up with one thing changed by configuration, against a reference. */
export interface FeatureVariant {
  name: string;
  /** What changes, for the table. */
  change: string;
  switches: FeatureSwitches;
  /** The variant its saving is computed against: `all on`, or the one it differs from alone. */
  reference: string;
}

/**
 * The variants (bench/README.md "Features"): every feature on as the rounds run them, then each switched off alone, the
 * request log switched on (the rounds run at `warn`), and production mode instead of `test`, which only a set-up without
 * the webhook endpoint can have (so against "webhooks off").
 */
export const FEATURE_VARIANTS: readonly FeatureVariant[] = [
  { name: 'all on', change: 'the rounds\' set-up (bench/README.md "Method")', switches: ALL_ON, reference: 'all on' },
  { name: 'Redis off', change: 'no REDIS_URL', switches: { ...ALL_ON, redis: false }, reference: 'all on' },
  { name: 'trusted documents off', change: 'no TRUSTED_DOCUMENTS', switches: { ...ALL_ON, trustedDocuments: false }, reference: 'all on' },
  { name: 'webhooks off', change: 'WEBHOOK_DELIVERIES=false, no endpoint', switches: { ...ALL_ON, webhooks: false }, reference: 'all on' },
  {
    name: 'production mode',
    change: 'NODE_ENV=production without the two WEBHOOK_ALLOW_*, webhooks off',
    switches: { ...ALL_ON, webhooks: false, testMode: false },
    reference: 'webhooks off',
  },
  { name: 'request log on', change: 'LOG_LEVEL=info', switches: { ...ALL_ON, requestLog: true }, reference: 'all on' },
];

/** One scenario's CPU cost under each variant, at one fixed rate. */
export interface FeatureCostRow {
  surface: string;
  name: string;
  rate: number;
  /** Median over rounds of each variant's measurement (by CPU time per request), by variant name. */
  variants: Record<string, Measurement>;
}

/** What the features phase needs from bench/run.ts. */
export interface FeaturePhaseOptions {
  /** Starts the service with `switches` (the webhook endpoint registered anew when it delivers). */
  start: (switches: FeatureSwitches) => Promise<RunningSystem>;
  /** Measures one scenario at `rate` requests per second (warm-up included), the webhook backlog delivered after it. */
  run: (system: RunningSystem, scenario: Scenario, rate: number) => Promise<Measurement>;
  scenarios: readonly Scenario[];
  rate: number;
  rounds: number;
  log: (message: string) => void;
}

/**
 * `npm run bench -- --features` (bench/README.md "Features"): the service started once per variant and round (the order
 * reversed every other round), each scenario at the same fixed rate, for the server's CPU time per request. The median
 * round of each variant (by CPU time per request; of an even count, the upper middle one) is kept.
 * @returns one row per scenario, its measurement under each of {@link FEATURE_VARIANTS}.
 */
export async function featurePhase({ start, run, scenarios, rate, rounds, log }: FeaturePhaseOptions): Promise<FeatureCostRow[]> {
  const kept = await interleavedRounds({
    variants: FEATURE_VARIANTS,
    nameOf: (variant) => variant.name,
    scenariosOf: () => scenarios,
    start: (variant) => {
      log(` ${variant.name}: ${variant.change}`);
      return start(variant.switches);
    },
    run: (system, scenario) => run(system, scenario, rate),
    rounds,
    label: 'Features',
    log,
  });
  return scenarios.map((scenario) => ({
    surface: scenario.surface,
    name: scenario.name,
    rate,
    variants: Object.fromEntries(FEATURE_VARIANTS.map((variant) => [variant.name, kept(variant, scenario)!])),
  }));
}

/** How the table is labelled: the run's rounds, seconds per run, and the machine with its load average. */
export interface FeatureTableContext {
  rounds: number;
  durationSeconds: number;
  machine: Record<string, string | number>;
}

/**
 * The phase's table: per scenario, the CPU ms per request with every feature on, and for each other variant its CPU
 * and its saving against its reference (reference − variant, ms and % of the reference; negative: the variant costs
 * more, as the request log switched on does).
 */
export function featureMarkdown(rows: FeatureCostRow[], { rounds, durationSeconds, machine }: FeatureTableContext): string {
  const others = FEATURE_VARIANTS.filter((variant) => variant.name !== 'all on');
  const cpu = (row: FeatureCostRow, variant: string) => row.variants[variant].cpuMsPerRequest;
  const lines = [
    `## Features: server CPU ms per request (median of ${rounds} rounds, ${durationSeconds} s at a fixed rate)`,
    '',
    Object.entries(machine)
      .map(([key, value]) => `${key}: ${value}`)
      .join('; '),
    '',
    ...others.map((variant) => `- **${variant.name}**: ${variant.change}; saving against "${variant.reference}"`),
    '',
    `| Scenario | Rate (req/s) | all on | ${others.map((variant) => `${variant.name} | saving ms | saving %`).join(' | ')} |`,
    `|---|--:|--:|${others.map(() => '--:|--:|--:').join('|')}|`,
    ...rows.map((row) => {
      const cells = others.map((variant) => {
        const [reference, value] = [cpu(row, variant.reference), cpu(row, variant.name)];
        return `${value.toFixed(3)} | ${(reference - value).toFixed(3)} | ${(((reference - value) / reference) * 100).toFixed(1)} %`;
      });
      return `| ${row.surface} ${row.name} | ${row.rate} | ${cpu(row, 'all on').toFixed(3)} | ${cells.join(' | ')} |`;
    }),
    '',
    `p99 ms (${FEATURE_VARIANTS.map((variant) => variant.name).join(' / ')}): ${rows
      .map((row) => `${row.surface} ${row.name} ${FEATURE_VARIANTS.map((variant) => row.variants[variant.name].p99).join(' / ')}`)
      .join('; ')}`,
    '',
  ];
  return lines.join('\n');
}
