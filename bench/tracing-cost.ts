import { type Server, createServer } from 'node:http';
import type { Measurement, RunningSystem } from './bench.runner';
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
  const measured = new Map<string, Measurement[]>();
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [...TRACING_VARIANTS] : [...TRACING_VARIANTS].reverse();
      log(`Tracing, round ${round + 1} of ${rounds}: ${order.join(', ')}`);
      for (const variant of order) {
        const system = await start(envOf(variant, collector.endpoint));
        try {
          for (const scenario of scenarios) {
            const key = `${variant}\u0000${scenario.surface}\u0000${scenario.name}`;
            measured.set(key, [...(measured.get(key) ?? []), await run(system, scenario, rate)]);
          }
        } finally {
          await system.stop();
        }
      }
    }
    log(`  the null collector took ${collector.exports()} exports`);
  } finally {
    await collector.close();
  }
  const median = (list: Measurement[]) => [...list].sort((a, b) => a.cpuMsPerRequest - b.cpuMsPerRequest)[Math.floor(list.length / 2)];
  return scenarios.map((scenario) => ({
    surface: scenario.surface,
    name: scenario.name,
    rate,
    variants: Object.fromEntries(
      TRACING_VARIANTS.map((variant) => [variant, median(measured.get(`${variant}\u0000${scenario.surface}\u0000${scenario.name}`)!)]),
    ) as Record<TracingVariant, Measurement>,
  }));
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
