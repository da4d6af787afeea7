import path from 'node:path';
import type { AbRuns, AbSettings } from './ab.report';
import { type Measurement, type RunningSystem, measure, measureAtRate, probe } from './bench.runner';
import { freePort } from '../test/support/free-port';
import type { Scenario, ScenarioContext } from './scenarios';
import { type Feature, type ProbeTarget, checkFeatures } from './ab/feature.probes';
import { AB_MARK } from './ab/replace-export';
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

/**
 * Checks that a started service is the variant it was started as: its preload announced itself
 * on standard error, and every probe finds exactly the features of `off` off.
 *
 * @param target - the service, its metrics origin and the scenario context the probes use.
 * @param off - the features expected off; default the variant's own.
 * @param label - names the system in the error, e.g. `without metrics`.
 * @throws naming the missing announcement or each feature in the wrong state.
 */
export async function checkVariant(variant: AbVariant, target: ProbeTarget, label: string, off: readonly Feature[] = variant.off): Promise<void> {
  if (variant.preload !== undefined && !target.system.output().stderr.includes(AB_MARK)) {
    throw new Error(`A/B: the service ${label} did not announce its preload ${variant.preload} on standard error.`);
  }
  await checkFeatures(target, off, label);
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

/** What {@link runAb} measured. */
export interface AbMeasured {
  /** One entry per system and scenario, a window per cycle (the same index: the same cycle). */
  runs: AbRuns[];
  /** Seconds to start, probe and warm up every system. */
  setupSeconds: number;
  /** Seconds of the cycles. */
  measureSeconds: number;
}

/** A copy of `items` in a random order (Fisher–Yates). */
function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}

/** Measures every system, one after the other in a random order. @returns the measurements in `running`'s order. */
async function inTurn(running: ReadonlyArray<{ system: RunningSystem }>, measureOne: (system: RunningSystem) => Promise<Measurement>): Promise<Measurement[]> {
  const windows = new Array<Measurement>(running.length);
  for (const i of shuffled(running.map((_, index) => index))) windows[i] = await measureOne(running[i].system);
  return windows;
}

/**
 * The A/B (bench/README.md "Per-request cost"). Starts every system at once, all on and each
 * variant, one process each, and checks each with every probe: exactly the variant's features off
 * ({@link checkFeatures}), and its preload's announcement on standard error. Warms each up: every
 * scenario once checked ({@link probe}), then `settings.warmupRequests` of it as fast as it
 * answers. Then a cycle that is not recorded, and `settings.cycles` cycles (fewer if
 * `settings.minutes` runs out first, at least one): in each, for each scenario, every system in a new random
 * order, back to back, one window each of `settings.requests` requests (as fast as it answers over
 * `settings.connections` connections, or at `settings.rate`), its server CPU time per request read
 * `settings.settleMs` after the last answer. A drift of the machine's speed then falls on every
 * system of a cycle alike, and the report pairs each variant's window with all on's of its cycle.
 *
 * @returns each system's windows, and how long setting up and measuring took.
 * @throws when a system does not start, a probe finds a feature in the wrong state, a preload did
 *   not announce itself, a scenario's checked request gets an unexpected answer, or a window of
 *   the unrecorded cycle does. Unexpected statuses in recorded windows are counted in the
 *   measurements, not thrown. Every started system is
 *   stopped either way.
 */
export async function runAb({ variants, scenarios, context, settings, start, log }: AbPlan): Promise<AbMeasured> {
  const began = performance.now();
  const systems = [ALL_ON, ...variants];
  const runs: AbRuns[] = systems.flatMap((system) =>
    scenarios.map((scenario) => ({ system: system.name, surface: scenario.surface, name: scenario.name, cycles: [] })),
  );
  const entry = (system: AbVariant, scenario: Scenario) =>
    runs.find((r) => r.system === system.name && r.surface === scenario.surface && r.name === scenario.name)!;
  const window = (system: RunningSystem, scenario: Scenario): Promise<Measurement> =>
    settings.rate === undefined
      ? measure(system, scenario, context, { duration: 0, amount: settings.requests, connections: settings.connections, settleMs: settings.settleMs })
      : measureAtRate(system, scenario, context, {
          duration: settings.requests / settings.rate,
          rate: settings.rate,
          connections: settings.connections,
          settleMs: settings.settleMs,
        });

  const running: Array<{ variant: AbVariant; system: RunningSystem }> = [];
  try {
    for (const variant of systems) {
      const metricsPort = await freePort();
      const system = await start(variant, metricsPort);
      running.push({ variant, system });
      const label = variant === ALL_ON ? 'all on' : `without ${variant.name}`;
      await checkVariant(variant, { system, metricsUrl: `http://127.0.0.1:${metricsPort}`, context }, label);
      for (const scenario of scenarios) {
        await probe(system, scenario, context);
        if (settings.warmupRequests > 0) {
          await measure(system, scenario, context, { duration: 0, amount: settings.warmupRequests, connections: settings.connections });
        }
      }
      log(`  started, probed and warmed up: ${variant.name} (pid ${system.pid})`);
    }
    const setupSeconds = (performance.now() - began) / 1000;
    log(`A/B: ${running.length} systems started in ${setupSeconds.toFixed(0)} s`);

    // Cycle 0 is not recorded: it puts every system in the state the cycles keep it in, where it
    // has been idle while the others were measured, whatever the order they were started in.
    let lastCycleMs = 0;
    for (let cycle = 0; cycle <= settings.cycles; cycle++) {
      const cycleBegan = performance.now();
      if (cycle > 1 && settings.minutes !== undefined && cycleBegan + lastCycleMs - began > settings.minutes * 60_000) break;
      const allOn: string[] = [];
      for (const scenario of scenarios) {
        const windows = await inTurn(running, (system) => window(system, scenario));
        running.forEach(({ variant }, i) => {
          const measurement = windows[i];
          if (cycle > 0) entry(variant, scenario).cycles.push(measurement);
          if (measurement.unexpected > 0 || measurement.total === 0) {
            const what = `${variant.name} ${scenario.surface} ${scenario.name} ${JSON.stringify(measurement.statuses)}`;
            if (cycle === 0) throw new Error(`A/B: unexpected statuses or no responses in cycle 0: ${what}`);
            log(`  UNEXPECTED ${what}`);
          }
          if (variant === ALL_ON) allOn.push(`${scenario.surface} ${scenario.name} ${measurement.cpuMsPerRequest.toFixed(3)}`);
        });
      }
      lastCycleMs = performance.now() - cycleBegan;
      log(
        `A/B cycle ${cycle} of ${settings.cycles}${cycle === 0 ? ' (not recorded)' : ''} (${(lastCycleMs / 1000).toFixed(1)} s), all on CPU ms/request: ${allOn.join(', ')}`,
      );
    }
    return { runs, setupSeconds, measureSeconds: (performance.now() - began) / 1000 - setupSeconds };
  } finally {
    await Promise.all(running.map(({ system }) => system.stop()));
  }
}
