import { type BenchResults, type Summary, checkTargets, comparePeers, compareBaseline, median, ratioTo, summarise } from './bench.report';
import type { Measurement } from './bench.runner';

/** A measurement without its status counts: what the committed results keep of one run. */
export type MeasurementSummary = Omit<Measurement, 'statuses'>;

const summaryOf = ({ statuses: _statuses, ...rest }: Measurement): MeasurementSummary => rest;

/**
 * The committed form of a run, `results/latest.json`: for each system and scenario the medians
 * over rounds (no round's samples), the fixed-rate, scale and Galera figures, the comparisons and
 * the targets. The full results, every round of every system, go to `results/raw/` (ignored).
 */
export function compactResults(results: BenchResults) {
  return {
    startedAt: results.startedAt,
    mode: results.mode,
    seconds: Math.round(results.seconds),
    machine: results.machine,
    settings: results.settings,
    ...(results.baseline && { baseline: results.baseline }),
    summaries: results.runs.map((runs) => ({
      system: runs.system,
      surface: runs.surface,
      name: runs.name,
      rounds: runs.rounds.length,
      ...(summarise(runs) as Summary),
      cpuMsPerRequest: median(runs.rounds.map((m) => m.cpuMsPerRequest)),
    })),
    halfRate: results.halfRate.map(({ name, surface, rate, b1c, service, baseline, peers }) => ({
      name,
      surface,
      rate,
      b1c: summaryOf(b1c),
      service: summaryOf(service),
      ...(baseline && { baseline: summaryOf(baseline) }),
      ...(peers && { peers: Object.fromEntries(Object.entries(peers).map(([peer, m]) => [peer, summaryOf(m)])) }),
    })),
    scale: results.scale.map(({ rows, deepPage, plans, latency }) => ({
      rows,
      deepPage,
      plans,
      latency: Object.fromEntries(Object.entries(latency).map(([label, m]) => [label, { mean: m.mean, p99: m.p99, unexpected: m.unexpected }])),
    })),
    ...(results.galera && {
      galera: {
        reads: results.galera.reads,
        scenarios: results.galera.scenarios.map(({ name, b1c, service, oneServerRatio }) => ({
          name,
          b1c: summaryOf(b1c),
          service: summaryOf(service),
          oneServerRatio,
        })),
      },
    }),
    graphqlPeers: comparePeers(results),
    ...(results.baseline && { baselineComparison: compareBaseline(results) }),
    targets: checkTargets(results),
  };
}

/** For JSON.stringify: floats to 4 decimals (integers as they are), so the committed JSON holds figures, not noise digits. */
export const roundFloats = (_key: string, value: unknown): unknown =>
  typeof value === 'number' && !Number.isInteger(value) && Number.isFinite(value) ? Math.round(value * 1e4) / 1e4 : value;

/** `lo×–hi×` over the defined values, or `–`. */
function range(values: Array<number | undefined>): string {
  const defined = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  if (defined.length === 0) return '–';
  const [lo, hi] = [Math.min(...defined), Math.max(...defined)];
  return lo.toFixed(2) === hi.toFixed(2) ? `${lo.toFixed(2)}×` : `${lo.toFixed(2)}–${hi.toFixed(2)}×`;
}

const READS = ['get', 'list-20', 'list-100', 'list-status'];

/** The header of `results/history.md`'s table; {@link historyLine} writes its rows. */
export const HISTORY_HEADER = [
  '| Run | Commit | Seconds | REST reads × B1c | REST create × B1c | GraphQL reads × B1c | GraphQL CPU × B1c (fixed rate) | Service × apollo / yoga / mercurius (GraphQL) | Targets met |',
  '|---|---|--:|--:|--:|--:|--:|--:|--:|',
];

/** One line of `results/history.md` for a full run: its headline ratios. */
export function historyLine(results: BenchResults, commit: string): string {
  const graphqlCpu = results.halfRate.filter((row) => row.surface === 'graphql').map((row) => row.service.cpuMsPerRequest / row.b1c.cpuMsPerRequest);
  const peers = comparePeers(results);
  const peer = (name: string) => range(peers.filter((row) => row.system === name).map((row) => row.serviceRatio));
  const targets = checkTargets(results);
  return `| ${results.startedAt.slice(0, 16).replace('T', ' ')} | ${commit.slice(0, 7)}${commit.endsWith('+') ? '+' : ''} | ${Math.round(results.seconds)} | ${range(READS.map((name) => ratioTo(results, 'B1c', 'rest', name)))} | ${range([ratioTo(results, 'B1c', 'rest', 'create')])} | ${range(READS.map((name) => ratioTo(results, 'B1c', 'graphql', name)))} | ${range(graphqlCpu)} | ${peer('apollo')} / ${peer('yoga')} / ${peer('mercurius')} | ${targets.filter((t) => t.met).length} of ${targets.length} |`;
}
