import type { Measurement, RunningSystem } from './bench.runner';
import type { Scenario } from './scenarios';

/** The median of `measurements` by CPU time per request (of an even count, the upper middle one). */
export function medianByCpu(measurements: readonly Measurement[]): Measurement {
  return [...measurements].sort((a, b) => a.cpuMsPerRequest - b.cpuMsPerRequest)[Math.floor(measurements.length / 2)];
}

/** What {@link interleavedRounds} runs: each of `variants` (systems, or one system's set-ups) on its scenarios. */
export interface InterleavedRoundsOptions<V> {
  variants: readonly V[];
  /** How the log and the results name a variant; unique. */
  nameOf: (variant: V) => string;
  /** The scenarios a variant runs (default: `scenarios`). */
  scenariosOf: (variant: V) => readonly Scenario[];
  /** Starts a fresh process of `variant`. */
  start: (variant: V) => Promise<RunningSystem>;
  /** Measures one scenario on a started variant (warm-up included), at the phase's fixed rate. */
  run: (system: RunningSystem, scenario: Scenario, variant: V) => Promise<Measurement>;
  rounds: number;
  /** What the log calls the phase: "Tracing", "Features", "Fixed rate". */
  label: string;
  log: (message: string) => void;
}

/**
 * The fixed-rate phases' one method (bench/README.md "Scenarios", "Tracing", "Features"): `rounds` rounds, in each a fresh
 * process of every variant, in an order reversed every other round, each running its scenarios; per variant and
 * scenario the median round by CPU time per request is kept, so that a machine's drift falls on every variant alike.
 * @returns the kept measurement of a variant's scenario; undefined for a scenario it did not run.
 */
export async function interleavedRounds<V>(options: InterleavedRoundsOptions<V>): Promise<(variant: V, scenario: Scenario) => Measurement | undefined> {
  const { variants, nameOf, scenariosOf, start, run, rounds, label, log } = options;
  const measured = new Map<string, Measurement[]>();
  const keyOf = (variant: V, scenario: Scenario) => `${nameOf(variant)}\u0000${scenario.surface}\u0000${scenario.name}`;
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? [...variants] : [...variants].reverse();
    log(`${label}, round ${round + 1} of ${rounds}: ${order.map(nameOf).join(', ')}`);
    for (const variant of order) {
      const system = await start(variant);
      try {
        for (const scenario of scenariosOf(variant)) {
          const key = keyOf(variant, scenario);
          measured.set(key, [...(measured.get(key) ?? []), await run(system, scenario, variant)]);
        }
      } finally {
        await system.stop();
      }
    }
  }
  return (variant, scenario) => {
    const list = measured.get(keyOf(variant, scenario));
    return list && medianByCpu(list);
  };
}
