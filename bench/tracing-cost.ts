import { type Server, createServer } from 'node:http';
import type { Measurement, RunningSystem } from './bench.runner';
import { interleavedRounds } from './interleaved-rounds';
import type { Scenario } from './scenarios';

/** The three set-ups compared: tracing off, and on at two sampling ratios (docs/operations.md "Tracing"). */
export const TRACING_VARIANTS = ['off', '10 %', '100 %'] as const;
export type TracingVariant = (typeof TRACING_VARIANTS)[number];

/** One scenario's CPU cost under each variant, at one fixed rate. */
export interface TracingCostRow {
  surface: string;
  name: string;
  rate: number;
  /** Median over rounds of each variant's measurement (by CPU time per request). */
  variants: Record<TracingVariant, Measurement>;
}

/** What the tracing phase needs from bench/run.ts. */
export interface TracingPhaseOptions {
  /** Starts the service with `env` added to its environment. */
  start: (env: Record<string, string>) => Promise<RunningSystem>;
  /** Measures one scenario at `rate` requests per second (warm-up included). */
  run: (system: RunningSystem, scenario: Scenario, rate: number) => Promise<Measurement>;
  scenarios: readonly Scenario[];
  rate: number;
  rounds: number;
  log: (message: string) => void;
}

/** An OTLP/HTTP endpoint that takes every export and keeps nothing: the exporter's work is measured, not a collector's. */
async function startNullCollector(): Promise<{ endpoint: string; exports: () => number; close: () => Promise<void> }> {
  let exports = 0;
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      exports++;
      response.writeHead(200, { 'Content-Type': String(request.headers['content-type'] ?? 'application/x-protobuf') });
      response.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    exports: () => exports,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The environment of each variant: off is no OTEL_* at all; on exports over http/protobuf (the default) to `endpoint`. */
function envOf(variant: TracingVariant, endpoint: string): Record<string, string> {
  if (variant === 'off') return {};
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: variant === '10 %' ? '0.1' : '1',
  };
}

/**
 * `npm run bench -- --tracing` (bench/README.md "Tracing"): the service started once per variant and round (the order
 * reversed every other round), each scenario at the same fixed rate, for the server's CPU time per request. The median
 * round of each variant (by CPU time per request; of an even count, the upper middle one) is kept.
 */
export async function tracingPhase({ start, run, scenarios, rate, rounds, log }: TracingPhaseOptions): Promise<TracingCostRow[]> {
  const collector = await startNullCollector();
  try {
    const kept = await interleavedRounds({
      variants: TRACING_VARIANTS,
      nameOf: (variant) => variant,
      scenariosOf: () => scenarios,
      start: (variant) => start(envOf(variant, collector.endpoint)),
      run: (system, scenario) => run(system, scenario, rate),
      rounds,
      label: 'Tracing',
      log,
    });
    log(`  the null collector took ${collector.exports()} exports`);
    return scenarios.map((scenario) => ({
      surface: scenario.surface,
      name: scenario.name,
      rate,
      variants: Object.fromEntries(TRACING_VARIANTS.map((variant) => [variant, kept(variant, scenario)!])) as Record<TracingVariant, Measurement>,
    }));
  } finally {
    await collector.close();
  }
}

/** The phase's table: CPU seconds per 1,000 requests for each variant, and each on-variant's ratio to off. */
export function tracingMarkdown(rows: TracingCostRow[], rounds: number, durationSeconds: number): string {
  const lines = [
    `## Tracing: server CPU per 1,000 requests (median of ${rounds} rounds, ${durationSeconds} s at a fixed rate)`,
    '',
    '| Scenario | Rate (req/s) | off (CPU s) | 10 % (CPU s) | × off | 100 % (CPU s) | × off | p99 off / 10 % / 100 % (ms) |',
    '|---|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map(({ surface, name, rate, variants }) => {
      const perThousand = (variant: TracingVariant) => variants[variant].cpuMsPerRequest;
      const ratio = (variant: TracingVariant) => (perThousand(variant) / perThousand('off')).toFixed(2);
      return `| ${surface} ${name} | ${rate} | ${perThousand('off').toFixed(2)} | ${perThousand('10 %').toFixed(2)} | ${ratio('10 %')} | ${perThousand('100 %').toFixed(2)} | ${ratio('100 %')} | ${variants.off.p99} / ${variants['10 %'].p99} / ${variants['100 %'].p99} |`;
    }),
    '',
  ];
  return lines.join('\n');
}
