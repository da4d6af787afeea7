import { median } from './bench.report';
import type { Measurement } from './bench.runner';
import type { Surface } from './scenarios';
import type { AbVariant } from './ab/variants';

/** Every window of one system of the A/B on one scenario: `cycles[i]` was measured in cycle i. */
export interface AbRuns {
  /** An {@link AbVariant} name, `all-on` included. */
  system: string;
  surface: Surface;
  name: string;
  cycles: Measurement[];
}

/** How the A/B ran. */
export interface AbSettings {
  /** Most cycles recorded (in each, every system measured once on every scenario); fewer when `minutes` runs out first. */
  cycles: number;
  /** When set, no cycle is begun that would end, at the pace of the last one, more than this many minutes after the first system started. */
  minutes?: number;
  /** Requests of one window. */
  requests: number;
  /** Connections of a window: all of them as fast as it answers; at most that many at a fixed rate. */
  connections: number;
  /** Requests per second of each window; undefined: as fast as it answers. */
  rate?: number;
  /** Requests of each scenario as fast as it answers, once per process before the first cycle: its warm-up. */
  warmupRequests: number;
  /** Milliseconds from a window's last answer to the reading of the server's CPU time. */
  settleMs: number;
  pets: number;
}

/** Everything one `npm run bench -- --ab` produced; written as JSON. */
export interface AbResults {
  startedAt: string;
  mode: 'full' | 'partial' | 'smoke';
  seconds: number;
  /** Of `seconds`: starting, probing and warming up every system. */
  setupSeconds: number;
  /** Of `seconds`: the cycles. */
  measureSeconds: number;
  machine: Record<string, string | number>;
  settings: AbSettings;
  /** All on first, then the variants run. */
  systems: Array<Pick<AbVariant, 'name' | 'feature' | 'how' | 'control'>>;
  runs: AbRuns[];
}

/** A median and a distribution-free interval around it. */
export interface MedianInterval {
  median: number;
  /** The interval's bounds: order statistics of the sample. */
  low: number;
  high: number;
  /** The interval's confidence, e.g. 0.959 (order statistics give no exact 0.95); NaN when the sample is too small for 0.95 and the bounds are its min and max. */
  confidence: number;
}

/** What one feature costs on one scenario: server CPU ms per request, paired with the reference ({@link referenceOf}) cycle by cycle. */
export interface AbCost {
  variant: string;
  surface: Surface;
  name: string;
  /** The reference's CPU ms per request, median over cycles. */
  reference: number;
  /** The variant's, median over cycles. */
  without: number;
  /** Of the cycles' `reference - variant` (negative: the variant spent more), ms per request: median and its interval. */
  saved: MedianInterval;
  /** `saved.median` over `reference`, percent. */
  savedPercent: number;
  /** Whether the interval is a 95 % one and excludes 0. */
  resolved: boolean;
  /** Cycles paired. */
  cycles: number;
}

/** P(X ≤ k) for X ~ Binomial(n, 1/2). */
function binomialHalfCdf(n: number, k: number): number {
  let logTerm = -n * Math.LN2;
  let sum = 0;
  for (let i = 0; i <= k; i++) {
    sum += Math.exp(logTerm);
    logTerm += Math.log((n - i) / (i + 1));
  }
  return sum;
}

/**
 * The median of a sample and a distribution-free 95 % interval for the population's median: the
 * order statistics x(k) and x(n+1-k) with the largest k whose coverage, 1 - 2 P(Binomial(n, 1/2) < k),
 * is at least 0.95 (for n = 20: x(6) and x(15), 95.9 %). Assumes independent draws, not a shape.
 *
 * @param values - the sample (NaN values dropped).
 * @returns NaN everywhere for an empty sample; for fewer than 6 values, no 95 % interval exists:
 *   min and max, confidence NaN.
 */
export function medianInterval(values: number[]): MedianInterval {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { median: NaN, low: NaN, high: NaN, confidence: NaN };
  let k = 0;
  while (k + 1 <= n / 2 && 1 - 2 * binomialHalfCdf(n, k) >= 0.95) k++;
  if (k === 0) return { median: median(sorted), low: sorted[0], high: sorted[n - 1], confidence: NaN };
  return { median: median(sorted), low: sorted[k - 1], high: sorted[n - k], confidence: 1 - 2 * binomialHalfCdf(n, k - 1) };
}

const runsOf = (results: AbResults, system: string, surface: Surface, name: string) =>
  results.runs.find((r) => r.system === system && r.surface === surface && r.name === name);

const cpuOf = (runs: AbRuns | undefined) => (runs?.cycles ?? []).map((m) => m.cpuMsPerRequest);

/** The scenarios run, in the order first run. */
function scenariosOf(results: AbResults): Array<{ surface: Surface; name: string }> {
  const seen = new Map<string, { surface: Surface; name: string }>();
  for (const { surface, name } of results.runs) seen.set(`${surface} ${name}`, { surface, name });
  return [...seen.values()];
}

/**
 * What every variant is compared with: the `none` control when it ran (all on, its preload loaded as
 * every variant's is: the one difference is the feature), else all on, which loads no preload.
 */
export function referenceOf(results: AbResults): string {
  return results.systems.some((system) => system.name === 'none') ? 'none' : 'all-on';
}

/**
 * @returns for each system but the reference and each scenario run: the reference's and the
 *   system's CPU ms per request (medians over cycles) and the median over cycles of the difference
 *   of the two windows of one cycle, with its interval ({@link medianInterval}).
 */
export function abCosts(results: AbResults): AbCost[] {
  const referenceName = referenceOf(results);
  return results.systems
    .filter((system) => system.name !== referenceName)
    .flatMap(({ name: variant }) =>
      scenariosOf(results).flatMap(({ surface, name }) => {
        const reference = cpuOf(runsOf(results, referenceName, surface, name));
        const without = cpuOf(runsOf(results, variant, surface, name));
        const paired = Math.min(reference.length, without.length);
        if (paired === 0) return [];
        const saved = medianInterval(Array.from({ length: paired }, (_, i) => reference[i] - without[i]));
        const referenceMedian = median(reference);
        return [
          {
            variant,
            surface,
            name,
            reference: referenceMedian,
            without: median(without),
            saved,
            savedPercent: (saved.median / referenceMedian) * 100,
            resolved: !Number.isNaN(saved.confidence) && (saved.low > 0 || saved.high < 0),
            cycles: paired,
          },
        ];
      }),
    );
}

const fixed = (value: number | undefined, digits: number) => (value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits).replace(/^-/, '−'));
const label = ({ surface, name }: { surface: Surface; name: string }) => `${surface === 'rest' ? 'REST' : 'GraphQL'} ${name}`;

/** The quartiles of a sample: the middle half's bounds. */
function quartiles(values: number[]): [number, number] {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))];
  return [at(0.25), at(0.75)];
}

/** One cell of the cost table: `saved ms (% of the reference) [low, high]`, with `n.r.` when the interval does not exclude 0. */
function costCell(cost: AbCost | undefined): string {
  if (!cost) return '–';
  const text = `${fixed(cost.saved.median, 3)} (${fixed(cost.savedPercent, 1)} %) [${fixed(cost.saved.low, 3)}, ${fixed(cost.saved.high, 3)}]`;
  return cost.resolved ? text : `${text} n.r.`;
}

/** @returns the A/B as Markdown: how it ran and on what, the per-feature CPU table with the controls, what each variant replaced, then throughput or latency per system. */
export function toAbMarkdown(results: AbResults): string {
  const { settings } = results;
  const scenarios = scenariosOf(results);
  const costs = abCosts(results);
  const referenceName = referenceOf(results);
  const reference = results.systems.find((s) => s.name === referenceName)!;
  const recorded = results.runs[0]?.cycles.length ?? 0;
  const load =
    settings.rate === undefined
      ? `as fast as it answers over ${settings.connections} connections`
      : `at ${settings.rate} req/s, evenly spaced, at most ${settings.connections} connections`;
  const lines: string[] = [];
  lines.push(
    `Run ${results.startedAt} (${results.mode}, ${Math.round(results.seconds)} s: ${Math.round(results.setupSeconds)} s to start, probe and warm up, ${Math.round(results.measureSeconds)} s of cycles): ${results.systems.length} systems started at once, each warmed up with ${settings.warmupRequests.toLocaleString('en')} requests of each scenario as fast as it answers; then ${recorded} cycle${recorded === 1 ? '' : 's'} (${settings.minutes === undefined ? `of ${settings.cycles} asked` : `as many as fit in ${settings.minutes} minutes`}) after one not recorded, in each for each scenario every system back to back in a random order, a window of ${settings.requests.toLocaleString('en')} requests ${load}; ${settings.pets.toLocaleString('en')} seeded pets.`,
  );
  lines.push('');
  lines.push(
    `Machine: ${Object.entries(results.machine)
      .map(([key, value]) => `${key} ${value}`)
      .join('; ')}.`,
  );
  lines.push('');
  lines.push('### Per-request cost, one feature at a time');
  lines.push('');
  lines.push(
    "Server CPU ms per request (all the process's threads, nanoseconds from schedstat, read " +
      `${settings.settleMs} ms after a window's last answer, over its responses). First row: the reference, ${referenceName === 'none' ? 'the `none` control (all on, with a preload that replaces nothing, loaded as every variant is)' : 'all on'}, median over cycles (interquartile range). ` +
      "Then per variant: saved ms per request, the median over cycles of the reference's window minus the variant's in the same cycle (% of the reference) " +
      '[distribution-free 95 % interval of that median]; negative: the variant spent more. **n.r.**: not resolved, the interval contains 0 ' +
      '(or, under 6 cycles, the range of the differences is shown and nothing is resolved). The controls at the bottom check the method.',
  );
  lines.push('');
  lines.push(`| Feature off | ${scenarios.map(label).join(' | ')} |`);
  lines.push(`|---|${scenarios.map(() => '--:').join('|')}|`);
  const referenceCells = scenarios.map(({ surface, name }) => {
    const cpu = cpuOf(runsOf(results, referenceName, surface, name));
    const [q1, q3] = quartiles(cpu);
    return cpu.length === 0 ? '–' : `${fixed(median(cpu), 3)} (${fixed(q1, 3)}–${fixed(q3, 3)})`;
  });
  lines.push(`| ${reference.feature} (reference): CPU ms/request | ${referenceCells.join(' | ')} |`);
  const variants = results.systems.filter((s) => s.name !== referenceName);
  for (const system of [...variants.filter((s) => !s.control), ...variants.filter((s) => s.control)]) {
    const cells = scenarios.map(({ surface, name }) => costCell(costs.find((c) => c.variant === system.name && c.surface === surface && c.name === name)));
    lines.push(`| ${system.feature} | ${cells.join(' | ')} |`);
  }
  const controls = variants.filter((s) => s.control);
  if (controls.length > 0) {
    lines.push('');
    for (const control of controls) {
      const own = costs.filter((c) => c.variant === control.name);
      const expected = control.control!.expectedSavedMs;
      const covering = own.filter((c) => c.saved.low <= expected && expected <= c.saved.high).length;
      const mean = own.reduce((sum, c) => sum + c.saved.median, 0) / own.length;
      lines.push(
        `- ${control.feature} (\`${control.name}\`): expected ${fixed(expected, 3)} ms; medians ${fixed(Math.min(...own.map((c) => c.saved.median)), 3)} to ${fixed(Math.max(...own.map((c) => c.saved.median)), 3)} (mean ${fixed(mean, 3)}); the interval holds ${fixed(expected, 3)} in ${covering} of ${own.length} scenarios.`,
      );
    }
  }
  lines.push('');
  lines.push('How each variant switches its feature off (bench/ab/*.preload.ts):');
  lines.push('');
  for (const system of variants) lines.push(`- ${system.feature} (\`${system.name}\`): ${system.how}.`);
  lines.push('');
  if (settings.rate === undefined) {
    lines.push(
      `Throughput in the same windows (autocannon and MariaDB on the same cores, so noisier than CPU): req/s, median over cycles, and for each other system the median of its per-cycle ratio to the reference (${reference.feature}):`,
    );
  } else {
    lines.push(`Latency at ${settings.rate} req/s, p50 / p99 ms, median over cycles:`);
  }
  lines.push('');
  lines.push(`| System | ${scenarios.map(label).join(' | ')} |`);
  lines.push(`|---|${scenarios.map(() => '--:').join('|')}|`);
  for (const system of results.systems) {
    const cells = scenarios.map(({ surface, name }) => {
      const windows = runsOf(results, system.name, surface, name)?.cycles ?? [];
      if (windows.length === 0) return '–';
      if (settings.rate !== undefined) return `${fixed(median(windows.map((m) => m.p50)), 1)} / ${fixed(median(windows.map((m) => m.p99)), 1)}`;
      const rps = median(windows.map((m) => m.rps));
      if (system.name === referenceName) return fixed(rps, 0);
      const base = runsOf(results, referenceName, surface, name)?.cycles ?? [];
      const ratio = median(windows.slice(0, base.length).map((m, i) => m.rps / base[i].rps));
      return `${fixed(rps, 0)} (${fixed(ratio, 2)}×)`;
    });
    lines.push(`| ${system.feature} | ${cells.join(' | ')} |`);
  }
  const unexpected = results.runs.reduce((sum, r) => sum + r.cycles.reduce((total, m) => total + m.unexpected, 0), 0);
  lines.push('');
  lines.push(`Unexpected responses (another status than the scenario expects, or connection errors), all windows: ${unexpected}.`);
  return `${lines.join('\n')}\n`;
}
