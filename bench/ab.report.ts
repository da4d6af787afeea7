import { median } from './bench.report';
import type { Measurement } from './bench.runner';
import type { Surface } from './scenarios';
import type { AbVariant } from './ab/variants';

/** Every measurement of one system of the A/B on one scenario, one per round. */
export interface AbRuns {
  /** An {@link AbVariant} name, `all-on` included. */
  system: string;
  surface: Surface;
  name: string;
  /** At the fixed rate: CPU time per request, p50, p99. */
  rounds: Measurement[];
  /** As fast as it answers, after the fixed rate (empty when that run is off). */
  max: Measurement[];
}

/** How the A/B ran. */
export interface AbSettings {
  rounds: number;
  /** Requests per second of the fixed-rate runs. */
  rate: number;
  /** Requests of each scenario as fast as it answers, all before the first measured run: the process's warm-up. */
  warmupRequests: number;
  /** Seconds at the fixed rate before each measured run, not measured. */
  settleSeconds: number;
  /** Seconds of each measured run at the fixed rate. */
  durationSeconds: number;
  /** Seconds of each as-fast-as-it-answers run; 0: none. */
  maxSeconds: number;
  /** Most connections at the fixed rate; all of them as fast as it answers. */
  connections: number;
  pets: number;
}

/** Everything one `npm run bench -- --ab` produced; written as JSON. */
export interface AbResults {
  startedAt: string;
  mode: 'full' | 'partial' | 'smoke';
  seconds: number;
  machine: Record<string, string | number>;
  settings: AbSettings;
  /** All on first, then the variants run. */
  systems: Array<Pick<AbVariant, 'name' | 'feature' | 'how'>>;
  runs: AbRuns[];
}

/** What one feature costs on one scenario: server CPU ms per request at the fixed rate, medians over rounds. */
export interface AbCost {
  variant: string;
  surface: Surface;
  name: string;
  allOn: number;
  without: number;
  /** `allOn - without`: negative when the service did more work without the feature. */
  savedMs: number;
  /** `savedMs` over `allOn`, percent. */
  savedPercent: number;
}

const cpuOf = (runs: AbRuns | undefined) => median((runs?.rounds ?? []).map((m) => m.cpuMsPerRequest));

const runsOf = (results: AbResults, system: string, surface: Surface, name: string) =>
  results.runs.find((r) => r.system === system && r.surface === surface && r.name === name);

/** The scenarios run, in the order first run. */
function scenariosOf(results: AbResults): Array<{ surface: Surface; name: string }> {
  const seen = new Map<string, { surface: Surface; name: string }>();
  for (const { surface, name } of results.runs) seen.set(`${surface} ${name}`, { surface, name });
  return [...seen.values()];
}

/** @returns for each variant and scenario run, CPU ms per request all on and without the feature, and the difference. */
export function abCosts(results: AbResults): AbCost[] {
  return results.systems
    .filter((system) => system.name !== 'all-on')
    .flatMap(({ name: variant }) =>
      scenariosOf(results).flatMap(({ surface, name }) => {
        const allOn = cpuOf(runsOf(results, 'all-on', surface, name));
        const without = cpuOf(runsOf(results, variant, surface, name));
        if (Number.isNaN(allOn) || Number.isNaN(without)) return [];
        return [{ variant, surface, name, allOn, without, savedMs: allOn - without, savedPercent: ((allOn - without) / allOn) * 100 }];
      }),
    );
}

const fixed = (value: number | undefined, digits: number) => (value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits));
const label = ({ surface, name }: { surface: Surface; name: string }) => `${surface === 'rest' ? 'REST' : 'GraphQL'} ${name}`;

/** @returns the A/B as Markdown: settings and machine, the per-feature CPU table, then latency and, if run, throughput per system. */
export function toAbMarkdown(results: AbResults): string {
  const { settings } = results;
  const scenarios = scenariosOf(results);
  const costs = abCosts(results);
  const lines: string[] = [];
  lines.push(
    `Run ${results.startedAt} (${results.mode}, ${Math.round(results.seconds)} s): ${settings.rounds} round${settings.rounds === 1 ? '' : 's'}, a fresh process per system and round, warmed up with ${settings.warmupRequests.toLocaleString('en')} requests of each scenario as fast as it answers; then per scenario ${settings.settleSeconds} s then ${settings.durationSeconds} s measured at ${settings.rate} req/s (evenly spaced, at most ${settings.connections} connections)${settings.maxSeconds > 0 ? `, then ${settings.maxSeconds} s as fast as it answers (${settings.connections} connections)` : ''}; ${settings.pets.toLocaleString('en')} seeded pets.`,
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
    `Server CPU ms per request at ${settings.rate} req/s (user + system time of the process over the responses, /proc/<pid>/stat in 10 ms ticks), median over rounds, in each cell: all on → without the feature: saved ms (% of all on). The first row gives all on's spread over rounds (min–max): a saving inside it is noise.`,
  );
  lines.push('');
  lines.push(`| Feature off | How | ${scenarios.map(label).join(' | ')} |`);
  lines.push(`|---|---|${scenarios.map(() => '--:').join('|')}|`);
  const allOn = results.systems.find((system) => system.name === 'all-on');
  if (allOn) {
    const cells = scenarios.map((scenario) => {
      const cpu = (runsOf(results, 'all-on', scenario.surface, scenario.name)?.rounds ?? []).map((m) => m.cpuMsPerRequest);
      return cpu.length === 0 ? '–' : `${fixed(median(cpu), 3)} (${fixed(Math.min(...cpu), 3)}–${fixed(Math.max(...cpu), 3)})`;
    });
    lines.push(`| ${allOn.feature} | ${allOn.how} | ${cells.join(' | ')} |`);
  }
  for (const system of results.systems.filter((s) => s.name !== 'all-on')) {
    const cells = scenarios.map(({ surface, name }) => {
      const cost = costs.find((c) => c.variant === system.name && c.surface === surface && c.name === name);
      return cost ? `${fixed(cost.allOn, 3)} → ${fixed(cost.without, 3)}: ${fixed(cost.savedMs, 3)} (${fixed(cost.savedPercent, 1)} %)` : '–';
    });
    lines.push(`| ${system.feature} | ${system.how} | ${cells.join(' | ')} |`);
  }
  lines.push('');
  lines.push(`Latency at ${settings.rate} req/s, p50 / p99 ms, median over rounds:`);
  lines.push('');
  lines.push(`| System | ${scenarios.map(label).join(' | ')} |`);
  lines.push(`|---|${scenarios.map(() => '--:').join('|')}|`);
  for (const system of results.systems) {
    const cells = scenarios.map(({ surface, name }) => {
      const rounds = runsOf(results, system.name, surface, name)?.rounds ?? [];
      return rounds.length === 0 ? '–' : `${fixed(median(rounds.map((m) => m.p50)), 1)} / ${fixed(median(rounds.map((m) => m.p99)), 1)}`;
    });
    lines.push(`| ${system.feature} | ${cells.join(' | ')} |`);
  }
  if (settings.maxSeconds > 0) {
    lines.push('');
    lines.push(
      `As fast as it answers (${settings.connections} connections, ${settings.maxSeconds} s, autocannon and MariaDB on the same cores): req/s, median over rounds, and its ratio to all on:`,
    );
    lines.push('');
    lines.push(`| System | ${scenarios.map(label).join(' | ')} |`);
    lines.push(`|---|${scenarios.map(() => '--:').join('|')}|`);
    for (const system of results.systems) {
      const cells = scenarios.map(({ surface, name }) => {
        const rps = median((runsOf(results, system.name, surface, name)?.max ?? []).map((m) => m.rps));
        const base = median((runsOf(results, 'all-on', surface, name)?.max ?? []).map((m) => m.rps));
        return Number.isNaN(rps) ? '–' : system.name === 'all-on' ? fixed(rps, 0) : `${fixed(rps, 0)} (${fixed(rps / base, 2)}×)`;
      });
      lines.push(`| ${system.feature} | ${cells.join(' | ')} |`);
    }
  }
  const unexpected = results.runs.reduce((sum, r) => sum + [...r.rounds, ...r.max].reduce((total, m) => total + m.unexpected, 0), 0);
  lines.push('');
  lines.push(`Unexpected responses (another status than the scenario expects, or connection errors), all runs: ${unexpected}.`);
  return `${lines.join('\n')}\n`;
}
