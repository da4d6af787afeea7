import path from 'node:path';
import type { AbRuns, AbSettings } from './ab.report';
import { type Measurement, type RunningSystem, measure, measureAtRate, probe } from './bench.runner';
import { freePort } from './free-port';
import type { Scenario, ScenarioContext } from './scenarios';
import { checkFeatures } from './ab/feature.probes';
import { ALL_ON, type AbVariant } from './ab/variants';

/** The operations of the A/B, on both surfaces. */
export const AB_OPERATIONS: readonly string[] = ['get', 'list-20', 'create'];

/** Where the built preloads are: dist/bench/ab/. */
const PRELOADS = path.join(__dirname, 'ab');

/**
 * The `--require` node option that loads a variant's preload, for NODE_OPTIONS (quoted, so a path
 * with spaces stays one argument); '' for a variant without one.
 */
export function preloadOption(variant: AbVariant): string {
  return variant.preload === undefined ? '' : `--require "${path.join(PRELOADS, variant.preload)}"`;
}

/** Starts the service as a variant asks, its metrics listener on `metricsPort`. */
export type StartVariant = (variant: AbVariant, metricsPort: number) => Promise<RunningSystem>;

/** What {@link runAb} needs. */
export interface AbPlan {
  /** Switched off one at a time; all on runs besides them. */
  variants: readonly AbVariant[];
  scenarios: readonly Scenario[];
  context: ScenarioContext;
  settings: AbSettings;
  start: StartVariant;
  log: (message: string) => void;
}

/**
 * The A/B (bench/README.md "Per-request cost"): each round starts a fresh service for all on and
 * for each variant, in an order reversed every other round, and checks with every probe that
 * exactly the variant's features are off ({@link checkFeatures}). Then it warms the process up:
 * each scenario once checked ({@link probe}), then `settings.warmupRequests` of it as fast as it
 * answers, so that V8 has compiled every path before anything is measured (a fresh process at
 * 1,000 req/s spends several times the CPU per request of a warm one). Then for
 * each scenario: `settings.settleSeconds` at the fixed rate, the measured run at that rate (server
 * CPU time per request, p50, p99) and, when `settings.maxSeconds` > 0, a run as fast as it answers.
 *
 * @returns one entry per system and scenario, a measurement per round.
 * @throws when a system does not start, a probe finds a feature in the wrong state, or a
 *   scenario's checked request gets an unexpected answer. Unexpected statuses under load are
 *   counted in the measurements, not thrown.
 */
export async function runAb({ variants, scenarios, context, settings, start, log }: AbPlan): Promise<AbRuns[]> {
  const systems = [ALL_ON, ...variants];
  const runs: AbRuns[] = systems.flatMap((system) =>
    scenarios.map((scenario) => ({ system: system.name, surface: scenario.surface, name: scenario.name, rounds: [], max: [] })),
  );
  const entry = (system: AbVariant, scenario: Scenario) =>
    runs.find((r) => r.system === system.name && r.surface === scenario.surface && r.name === scenario.name)!;
  const atRate = (system: RunningSystem, scenario: Scenario, duration: number) =>
    measureAtRate(system, scenario, context, { duration, connections: settings.connections, rate: settings.rate });

  for (let round = 0; round < settings.rounds; round++) {
    const order = round % 2 === 0 ? systems : [...systems].reverse();
    log(`A/B round ${round + 1} of ${settings.rounds}: ${order.map((system) => system.name).join(', ')}`);
    for (const variant of order) {
      const metricsPort = await freePort();
      const system = await start(variant, metricsPort);
      try {
        await checkFeatures(
          { system, metricsUrl: `http://127.0.0.1:${metricsPort}`, context },
          variant.off,
          variant === ALL_ON ? 'all on' : `without ${variant.name}`,
        );
        for (const scenario of scenarios) {
          await probe(system, scenario, context);
          if (settings.warmupRequests > 0) {
            await measure(system, scenario, context, { duration: 0, amount: settings.warmupRequests, connections: settings.connections });
          }
        }
        for (const scenario of scenarios) {
          if (settings.settleSeconds > 0) await atRate(system, scenario, settings.settleSeconds);
          const fixed = await atRate(system, scenario, settings.durationSeconds);
          const max: Measurement | undefined =
            settings.maxSeconds > 0
              ? await measure(system, scenario, context, { duration: settings.maxSeconds, connections: settings.connections })
              : undefined;
          entry(variant, scenario).rounds.push(fixed);
          if (max) entry(variant, scenario).max.push(max);
          const unexpected = fixed.unexpected + (max?.unexpected ?? 0);
          log(
            `  ${variant.name.padEnd(18)} ${scenario.surface.padEnd(7)} ${scenario.name.padEnd(8)} CPU ${fixed.cpuMsPerRequest.toFixed(3)} ms/req  p50 ${fixed.p50} ms  p99 ${fixed.p99} ms${max ? `  max ${Math.round(max.rps)} req/s` : ''}${unexpected ? `  UNEXPECTED ${JSON.stringify(fixed.statuses)} ${JSON.stringify(max?.statuses ?? {})}` : ''}`,
          );
        }
      } finally {
        await system.stop();
      }
    }
  }
  return runs;
}
