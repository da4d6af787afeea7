import type { ExplainRow } from './bench-database';
import { type Measurement, PEER_NAMES, type PeerName, type SystemName } from './bench.runner';
import type { CausalReadsResult } from './causal-reads';
import { FAN_OUT_TARGET, FOLLOWER_LABELS, type FeedResults, type FeedVariant, deliveryFailed } from './feed';

/** Every measurement of one system on one scenario, one per round. */
export interface ScenarioRuns {
  name: string;
  surface: 'rest' | 'graphql';
  system: SystemName;
  rounds: Measurement[];
}

/**
 * The fixed-rate comparison: B1c, the service, the baseline and on GraphQL each peer, at one rate per operation that
 * every one of them sustains (half of the slowest one's maximum; B1c runs the REST operation): latency, and server
 * CPU time per request, the median round by CPU.
 */
export interface HalfRateRow {
  name: string;
  surface: 'rest' | 'graphql';
  /** Requests per second sent to each. */
  rate: number;
  /** B1c on the REST operation. */
  b1c: Measurement;
  service: Measurement;
  /** With `--baseline`: the service built from the other commit, at the same rate. */
  baseline?: Measurement;
  /** The GraphQL peers run, on a GraphQL row. */
  peers?: Partial<Record<PeerName, Measurement>>;
}

/** The scale curve: latency at one table size. */
export interface ScalePoint {
  rows: number;
  /** The page number of the `deep page` queries: 5,000 at 1,000,000 rows (docs/pagination.md). */
  deepPage: number;
  plans: Record<string, ExplainRow>;
  /** Query label (`list limit=20`, `get`, …) → measurement with one connection. */
  latency: Record<string, Measurement>;
}

/** The Galera phase: the price of causal reads on a node of a 3-node cluster. */
export interface GaleraResults {
  reads: CausalReadsResult;
  /** REST scenarios on the Galera node: B1c (no causality wait) and the service; `oneServerRatio` is service/B1c req/s in the main rounds. */
  scenarios: Array<{ name: string; b1c: Measurement; service: Measurement; oneServerRatio?: number }>;
}

/** Everything one `npm run bench` produced; written as JSON. */
export interface BenchResults {
  startedAt: string;
  mode: 'full' | 'smoke';
  seconds: number;
  machine: Record<string, string | number>;
  settings: {
    rounds: number;
    durationSeconds: number;
    warmupSeconds: number;
    connections: number;
    pets: number;
    /** How the service and the baseline were started: `production set-up` (bench/README.md "Method") or `bare` (`--bare`). */
    service?: string;
  };
  /** With `--baseline <git ref>`: the commit run as the system `baseline` (bench/README.md "Comparing with another commit"). */
  baseline?: { ref: string; commit: string; subject: string; nodeModules: 'shared' | 'installed'; setupSeconds: number };
  runs: ScenarioRuns[];
  halfRate: HalfRateRow[];
  scale: ScalePoint[];
  /** The feed phase (bench/README.md "Feed"). */
  feed?: FeedResults;
  galera?: GaleraResults;
}

/** One scenario's summary: medians over rounds (RSS: the maximum; unexpected: the sum). */
export interface Summary {
  rps: number;
  p50: number;
  p99: number;
  peakRssMb: number;
  unexpected: number;
}

/** The median of `values` (the mean of the middle two for an even count); NaN for none. */
export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** @returns the medians of a scenario's rounds, or undefined when it was not run. */
export function summarise(runs: ScenarioRuns | undefined): Summary | undefined {
  if (!runs || runs.rounds.length === 0) return undefined;
  const { rounds } = runs;
  return {
    rps: median(rounds.map((m) => m.rps)),
    p50: median(rounds.map((m) => m.p50)),
    p99: median(rounds.map((m) => m.p99)),
    peakRssMb: Math.max(...rounds.map((m) => m.peakRssMb)),
    unexpected: rounds.reduce((sum, m) => sum + m.unexpected, 0),
  };
}

const find = (results: BenchResults, system: SystemName, surface: string, name: string) =>
  summarise(results.runs.find((r) => r.system === system && r.surface === surface && r.name === name));

/** Service throughput over a baseline's for the same operation (GraphQL is compared with the baseline's REST). */
export function ratioTo(results: BenchResults, baseline: 'B1' | 'B1c', surface: string, name: string): number | undefined {
  const service = find(results, 'service', surface, name);
  const other = find(results, baseline, 'rest', name);
  return service && other ? service.rps / other.rps : undefined;
}

/** One system on one GraphQL scenario, beside the service: the rows of the peers' table. */
export interface PeerComparison {
  name: string;
  system: 'service' | PeerName;
  rps: number;
  p50: number;
  p99: number;
  peakRssMb: number;
  unexpected: number;
  /** Its req/s over B1c's for the same operation (B1c serves REST). */
  ratioToB1c?: number;
  /** The service's GraphQL req/s over this peer's (undefined on the service's own row). */
  serviceRatio?: number;
}

/** For each GraphQL scenario that a peer ran: the service, then each peer run, with their ratios. */
export function comparePeers(results: BenchResults): PeerComparison[] {
  const rows: PeerComparison[] = [];
  const names = [...new Set(results.runs.filter((r) => r.surface === 'graphql').map((r) => r.name))];
  for (const name of names) {
    const service = find(results, 'service', 'graphql', name);
    const b1c = find(results, 'B1c', 'rest', name);
    const peers = PEER_NAMES.map((peer) => [peer, find(results, peer, 'graphql', name)] as const).filter(([, summary]) => summary !== undefined);
    if (peers.length === 0) continue;
    for (const [system, summary] of [['service', service] as const, ...peers]) {
      if (!summary) continue;
      rows.push({
        name,
        system,
        ...summary,
        ratioToB1c: b1c && summary.rps / b1c.rps,
        serviceRatio: system === 'service' || !service ? undefined : service.rps / summary.rps,
      });
    }
  }
  return rows;
}

/** One scenario of the service beside the baseline (`--baseline`): medians over rounds, and CPU per request at the fixed rate when it ran. */
export interface BaselineComparison {
  name: string;
  surface: 'rest' | 'graphql';
  service: Summary;
  baseline: Summary;
  /** The service's req/s over the baseline's: above 1, the change is faster. */
  rpsRatio: number;
  /** CPU ms per request at the fixed rate, both at the same rate. */
  cpu?: { rate: number; service: number; baseline: number };
}

/** For each scenario both the service and the baseline ran: their summaries and ratios. */
export function compareBaseline(results: BenchResults): BaselineComparison[] {
  const rows: BaselineComparison[] = [];
  for (const runs of results.runs.filter((r) => r.system === 'service')) {
    const service = summarise(runs);
    const baseline = find(results, 'baseline', runs.surface, runs.name);
    if (!service || !baseline) continue;
    const fixedRate = results.halfRate.find((row) => row.surface === runs.surface && row.name === runs.name && row.baseline);
    rows.push({
      name: runs.name,
      surface: runs.surface,
      service,
      baseline,
      rpsRatio: service.rps / baseline.rps,
      ...(fixedRate?.baseline && { cpu: { rate: fixedRate.rate, service: fixedRate.service.cpuMsPerRequest, baseline: fixedRate.baseline.cpuMsPerRequest } }),
    });
  }
  return rows;
}

/** A target and whether this run met it. */
export interface TargetCheck {
  target: string;
  value: string;
  met: boolean;
}

const SCALE_QUERIES = ['list limit=1', 'list limit=20', 'list limit=100', 'deep page limit=100', 'list status limit=20', 'deep page status limit=20', 'get'];

/** The operations with throughput targets (every scenario but `unauthorized`). */
const TARGET_OPERATIONS = ['get', 'list-20', 'list-100', 'list-status', 'create', 'mixed'];

/** Minimum throughput ratios to each baseline, by surface (the issue's targets). */
const MINIMUM_RATIOS = { rest: { B1: 0.9, B1c: 0.8 }, graphql: { B1: 0.8, B1c: 0.6 } } as const;

/** Evaluates the issue's targets against the results. */
export function checkTargets(results: BenchResults): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const surface of ['rest', 'graphql'] as const) {
    for (const name of TARGET_OPERATIONS) {
      for (const baseline of ['B1', 'B1c'] as const) {
        const minimum = MINIMUM_RATIOS[surface][baseline];
        const value = ratioTo(results, baseline, surface, name);
        if (value !== undefined) checks.push({ target: `${surface} ${name} ≥ ${minimum}× ${baseline}`, value: `${value.toFixed(2)}×`, met: value >= minimum });
      }
    }
  }
  for (const row of results.halfRate) {
    const value = row.service.p99 / row.b1c.p99;
    checks.push({
      target: `${row.surface} ${row.name} p99 at ${row.rate} req/s ≤ 1.5× B1c's p99`,
      value: `${row.service.p99} ms vs ${row.b1c.p99} ms (${value.toFixed(2)}×)`,
      met: value <= 1.5,
    });
  }
  const first = results.scale[0];
  const last = results.scale.at(-1);
  if (first && last && last !== first) {
    // A deep page costs what the first does (keyset pagination, never OFFSET).
    for (const [deep, first] of [
      ['deep page limit=100', 'list limit=100'],
      ['deep page status limit=20', 'list status limit=20'],
    ]) {
      const value = last.latency[deep].mean / last.latency[first].mean;
      checks.push({
        target: `${deep} (page ${last.deepPage.toLocaleString('en')}) mean latency ≤ 1.2× page 1 at ${last.rows.toLocaleString('en')} rows`,
        value: `${last.latency[deep].mean.toFixed(2)} vs ${last.latency[first].mean.toFixed(2)} ms (${value.toFixed(2)}×)`,
        met: value <= 1.2,
      });
    }
    for (const query of SCALE_QUERIES.filter((q) => q.startsWith('list') || q.startsWith('deep'))) {
      const value = last.latency[query].mean / first.latency[query].mean;
      checks.push({
        target: `${query} mean latency at ${last.rows.toLocaleString('en')} rows ≤ 1.2× at ${first.rows.toLocaleString('en')}`,
        value: `${last.latency[query].mean.toFixed(2)} vs ${first.latency[query].mean.toFixed(2)} ms (${value.toFixed(2)}×)`,
        met: value <= 1.2,
      });
    }
  }
  checks.push(...checkPeerTargets(results));
  checks.push(...checkFeedTargets(results));
  for (const surface of ['rest', 'graphql']) {
    const mixed = find(results, 'service', surface, 'mixed');
    if (mixed) checks.push({ target: `server RSS ≤ 200 MB under the ${surface} mixed load`, value: `${mixed.peakRssMb} MB`, met: mixed.peakRssMb <= 200 });
  }
  return checks;
}

/** The read scenarios, as the peer targets name them. */
const READS = ['get', 'list-20', 'list-100', 'list-status'];

/**
 * The targets against the servers a user would pick instead (bench/README.md "Peers"): GraphQL
 * ahead of the Apollo and yoga peers on every scenario; GraphQL reads ≥ 0.5× B1c and ≥ 0.6×
 * mercurius; CPU per request at the fixed rate ≤ 1.6× B1c's on GraphQL and ≤ 1.25× on REST;
 * REST create ≥ 0.6× B1c.
 */
function checkPeerTargets(results: BenchResults): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const ratio = (target: string, value: number | undefined, minimum: number) => {
    if (value !== undefined && Number.isFinite(value)) checks.push({ target, value: `${value.toFixed(2)}×`, met: value >= minimum });
  };
  for (const name of TARGET_OPERATIONS) {
    const service = find(results, 'service', 'graphql', name);
    for (const peer of ['apollo', 'yoga'] as const) {
      const other = find(results, peer, 'graphql', name);
      ratio(`graphql ${name} ≥ 1× the ${peer} peer`, service && other && service.rps / other.rps, 1);
    }
  }
  for (const name of READS) {
    ratio(`graphql ${name} ≥ 0.5× B1c`, ratioTo(results, 'B1c', 'graphql', name), 0.5);
    const service = find(results, 'service', 'graphql', name);
    const mercurius = find(results, 'mercurius', 'graphql', name);
    ratio(`graphql ${name} ≥ 0.6× the mercurius peer`, service && mercurius && service.rps / mercurius.rps, 0.6);
  }
  ratio('rest create ≥ 0.6× B1c', ratioTo(results, 'B1c', 'rest', 'create'), 0.6);
  for (const row of results.halfRate) {
    const most = row.surface === 'graphql' ? 1.6 : 1.25;
    const value = row.service.cpuMsPerRequest / row.b1c.cpuMsPerRequest;
    if (!Number.isFinite(value)) continue;
    checks.push({
      target: `${row.surface} ${row.name} CPU per request at ${row.rate} req/s ≤ ${most}× B1c's`,
      value: `${row.service.cpuMsPerRequest.toFixed(3)} vs ${row.b1c.cpuMsPerRequest.toFixed(3)} ms (${value.toFixed(2)}×)`,
      met: value <= most,
    });
  }
  return checks;
}

/**
 * The feed's targets: every event to every follower once and in order; a webhook's latency with Redis a feed's (p50 under
 * 100 ms); creates within 5 % of the baseline's throughput.
 */
function checkFeedTargets(results: BenchResults): TargetCheck[] {
  const checks: TargetCheck[] = [];
  for (const variant of results.feed?.variants ?? []) {
    for (const d of variant.deliveries) {
      checks.push({
        target: `feed, ${FOLLOWER_LABELS[d.kind]} ${variant.redis ? 'with' : 'without'} Redis: every event to every follower exactly once, in order`,
        value: `${d.live}/${d.clients} followers, ${d.received}/${d.expected} received, ${d.missed} missed, ${d.duplicates} duplicates, ${d.outOfOrder} out of order${d.ended ? `, ${d.ended} streams ended` : ''}`,
        met: !deliveryFailed(d),
      });
    }
    const { sse, ws } = followerP99s(variant);
    checks.push({
      target: `feed ${variant.redis ? 'with' : 'without'} Redis: fan-out ≥ ${FAN_OUT_TARGET.perCore.toLocaleString('en-US')} events/s per core (SSE + WS) at p99 ≤ ${FAN_OUT_TARGET.p99Ms} ms`,
      value: `${fixed(variant.fanOut.perCore)} events/s per core (${fixed(variant.fanOut.perSecond)}/s on ${fixed(variant.fanOut.cores, 2)} cores), SSE p99 ${fixed(sse, 1)} ms, WS p99 ${fixed(ws, 1)} ms, ${variant.deliveries.find((d) => d.kind === 'sse')?.clients ?? 0} + ${variant.deliveries.find((d) => d.kind === 'ws')?.clients ?? 0} followers at ${variant.rate} creates/s`,
      met: variant.fanOut.perCore >= FAN_OUT_TARGET.perCore && sse <= FAN_OUT_TARGET.p99Ms && ws <= FAN_OUT_TARGET.p99Ms,
    });
    const webhook = variant.deliveries.find((d) => d.kind === 'webhook');
    if (variant.redis && webhook) {
      const beside = variant.deliveries
        .filter((d) => d !== webhook)
        .map((d) => `${FOLLOWER_LABELS[d.kind]} p50 ${fixed(d.latency.p50, 1)} ms`)
        .join(', ');
      checks.push({
        target: 'feed, webhook with Redis: latency (create answered → receiver) p50 < 100 ms',
        value: `p50 ${fixed(webhook.latency.p50, 1)} ms, p99 ${fixed(webhook.latency.p99, 1)} ms at ${variant.rate} creates/s${beside ? ` (${beside})` : ''}`,
        met: webhook.latency.p50 < 100,
      });
    }
  }
  if (results.baseline) {
    for (const row of compareBaseline(results).filter((r) => r.name === 'create')) {
      checks.push({
        target: `${row.surface} create req/s ≥ 0.95× the baseline's (${results.baseline.ref})`,
        value: `${row.service.rps.toFixed(0)} vs ${row.baseline.rps.toFixed(0)} (${row.rpsRatio.toFixed(2)}×)`,
        met: row.rpsRatio >= 0.95,
      });
    }
  }
  return checks;
}

/** The p99 latency of a run's SSE and WebSocket followers, milliseconds (NaN for a kind not measured). */
function followerP99s(variant: FeedVariant): { sse: number; ws: number } {
  const p99 = (kind: 'sse' | 'ws') => variant.deliveries.find((d) => d.kind === kind)?.latency.p99 ?? NaN;
  return { sse: p99('sse'), ws: p99('ws') };
}

/** The feed phase's tables: delivery per follower kind, then the sequencer's statements and time per create. */
function feedMarkdown(results: BenchResults): string[] {
  const feed = results.feed;
  if (!feed) return [];
  const lines: string[] = [''];
  const failures = feed.variants.flatMap((v) =>
    v.deliveries.filter(deliveryFailed).map((d) => `${FOLLOWER_LABELS[d.kind]} ${v.redis ? 'with' : 'without'} Redis`),
  );
  for (const v of feed.variants.filter((variant) => variant.serviceExited)) {
    lines.push(
      `**THE SERVICE DIED** during the creates ${v.redis ? 'with' : 'without'} Redis (${v.rate}/s; its last output is in the bench's log): the figures below stop there.`,
    );
    lines.push('');
  }
  if (failures.length > 0) {
    lines.push(
      `**FEED DELIVERY FAILED** (${failures.join(', ')}): an event missed, repeated or out of order, or a follower that could not follow. See the table.`,
    );
    lines.push('');
  }
  lines.push(
    "The change feed (bench/README.md 'Feed'): one instance of the service, its followers open (SSE: `GET /v1/events`; WebSocket: the subscription named; webhook: one endpoint of every pet, a receiver of the bench on 127.0.0.1 answering 204, registered with the build's `webhook add`), creates (REST) sent evenly spaced at the rate, open loop. Latency: from a create's 201 answer at the load generator to the event's arrival at a follower (a webhook delivery's body received), per event per follower; negative when the event came first. Each follower must have each created pet once, in feed order (`seq`); 'Client CPU' is the followers' process over the creates (a process per kind). Server CPU per create includes every delivery, the webhook's too:",
  );
  lines.push('');
  lines.push(
    `Followers: ${(feed.variants[0]?.deliveries ?? []).map((d) => `${d.clients} ${FOLLOWER_LABELS[d.kind]}`).join(', ') || 'none'}; creates at ${feed.variants[0]?.rate ?? 0}/s for ${feed.variants[0]?.seconds ?? 0} s.`,
  );
  lines.push('');
  lines.push(
    '| Redis | Kind | Subscription | Followers live / asked | Creates (201) | Received / expected | Missed | Duplicates | Out of order | p50 ms | p90 ms | p99 ms | max ms | Server CPU ms/create | Client CPU ms | All had the last after ms |',
  );
  lines.push('|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const v of feed.variants) {
    for (const d of v.deliveries) {
      const bad = (n: number) => (n > 0 ? `**${n}**` : '0');
      lines.push(
        `| ${v.redis ? 'yes' : 'no'} | ${FOLLOWER_LABELS[d.kind]} | ${d.kind === 'ws' ? v.subscription : '–'} | ${d.failed ? `**${d.live} / ${d.clients}**` : `${d.live} / ${d.clients}`} | ${v.creates.statuses['201'] ?? 0} | ${d.received} / ${d.expected} | ${bad(d.missed)} | ${bad(d.duplicates)} | ${bad(d.outOfOrder)} | ${fixed(d.latency.p50, 1)} | ${fixed(d.latency.p90, 1)} | ${fixed(d.latency.p99, 1)} | ${fixed(d.latency.max, 1)} | ${fixed(v.creates.cpuMsPerRequest, 3)} | ${d.clientCpuMs} | ${fixed(v.drainMs)} |`,
      );
    }
    if (v.sseMissing) lines.push(`| ${v.redis ? 'yes' : 'no'} | SSE | – | not measured: ${v.sseMissing} | | | | | | | | | | | | |`);
    if (v.webhookMissing) lines.push(`| ${v.redis ? 'yes' : 'no'} | webhook | – | not measured: ${v.webhookMissing} | | | | | | | | | | | | |`);
  }
  lines.push('');
  lines.push(
    `Fan-out (issue 43's target: ≥ ${FAN_OUT_TARGET.perCore.toLocaleString('en-US')} events/s per core, SSE and WebSocket together, at p99 ≤ ${FAN_OUT_TARGET.p99Ms} ms): every event each SSE and WebSocket follower received of the measured creates, over the creates' window (the wall time between the two reads of the server's CPU time), and over the cores the server used in it (its CPU seconds per wall second, from schedstat); the creates' own cost and the webhook's deliveries are in that CPU:`,
  );
  lines.push('');
  lines.push('| Redis | Deliveries (SSE + WS) | Window s | Deliveries/s | Server cores | Events/s per core | SSE p99 ms | WS p99 ms |');
  lines.push('|---|--:|--:|--:|--:|--:|--:|--:|');
  for (const v of feed.variants) {
    const { sse, ws } = followerP99s(v);
    lines.push(
      `| ${v.redis ? 'yes' : 'no'} | ${v.fanOut.deliveries} | ${fixed(v.creates.cpuWindowMs / 1000, 1)} | ${fixed(v.fanOut.perSecond)} | ${fixed(v.fanOut.cores, 2)} | ${fixed(v.fanOut.perCore)} | ${fixed(sse, 1)} | ${fixed(ws, 1)} |`,
    );
  }
  const counted = feed.sequencer;
  if (counted.length > 0) {
    lines.push('');
    lines.push(
      `The sequencer's cost per create: the system alone, creates (REST) at ${counted[0].rate}/s for ${counted[0].seconds} s, its database connections through a proxy of the bench that counts the statements it sends and times each from sending to the first byte of its answer (MariaDB's time plus a loopback hop each way; the proxy slows each statement by that hop, so stamps batch a little more than without it). Sequencer: the lease claims, the "any unstamped?" checks and each stamp transaction's statements (SET TRANSACTION, START, the head's lock, the batch's SELECT, the UPDATE of \`pet.seq\`, the head's UPDATE, COMMIT). Server CPU per create includes the feed's timers (fixed per second: claim every second, stamp check every 100 ms, follow every 200 ms):`,
    );
    lines.push('');
    lines.push(
      '| System | Creates (201) | Stamped | Statements / create, all | Sequencer statements / create | Sequencer ms / create (stamp transactions, checks) | Stamp transactions | Pets per stamp transaction | ms per stamp transaction | Server CPU ms / create |',
    );
    lines.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
    for (const c of counted) {
      const all = c.statements.reduce((sum, s) => sum + s.count, 0);
      const per = (value: number, digits: number) => fixed(c.creates > 0 ? value / c.creates : NaN, digits);
      lines.push(
        `| ${c.system} | ${c.creates} | ${c.stamped} | ${per(all, 2)} | ${per(c.sequencer.count, 2)} | ${per(c.sequencer.ms, 3)} | ${c.stampTransactions.count} | ${fixed(c.stampTransactions.count > 0 ? c.stamped / c.stampTransactions.count : NaN, 2)} | ${fixed(c.stampTransactions.count > 0 ? c.stampTransactions.ms / c.stampTransactions.count : NaN, 2)} | ${fixed(c.cpuMsPerCreate, 3)} |`,
      );
    }
    lines.push('');
    lines.push('Statements per create by kind (count / create, ms / create):');
    lines.push('');
    lines.push(`| Kind | ${counted.map((c) => c.system).join(' | ')} |`);
    lines.push(`|---|${counted.map(() => '--:').join('|')}|`);
    const kinds = [...new Set(counted.flatMap((c) => c.statements.map((s) => s.kind)))];
    for (const kind of kinds) {
      const cells = counted.map((c) => {
        const tally = c.statements.find((s) => s.kind === kind);
        return tally && c.creates > 0 ? `${(tally.count / c.creates).toFixed(3)} / ${(tally.ms / c.creates).toFixed(3)}` : '–';
      });
      lines.push(`| \`${kind.replace(/\|/g, '\\|')}\` | ${cells.join(' | ')} |`);
    }
  }
  return lines;
}

const fixed = (value: number | undefined, digits = 0) => (value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits));

/** @returns the results as Markdown: machine, main table, fixed-rate table (latency, CPU per request), scale curve, targets. */
export function toMarkdown(results: BenchResults): string {
  const lines: string[] = [];
  const { settings, machine } = results;
  lines.push(
    `Run ${results.startedAt} (${results.mode}, ${Math.round(results.seconds)} s): ${settings.rounds} rounds × ${settings.durationSeconds} s per scenario and system (after ${settings.warmupSeconds} s warm-up), ${settings.connections} connections, ${settings.pets.toLocaleString('en')} seeded pets${settings.service ? `; the service: ${settings.service}` : ''}.`,
  );
  lines.push('');
  lines.push(
    `Machine: ${Object.entries(machine)
      .map(([key, value]) => `${key} ${value}`)
      .join('; ')}.`,
  );
  lines.push('');
  lines.push(
    '| Scenario | Surface | req/s | p50 ms | p99 ms | × B1 | × B1c | B1 req/s | B1 p99 ms | B1c req/s | B1c p99 ms | B0 req/s | Peak RSS MB | Unexpected |',
  );
  lines.push('|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  const names = [...new Set(results.runs.map((r) => r.name))];
  for (const name of names) {
    for (const surface of ['rest', 'graphql']) {
      const service = find(results, 'service', surface, name);
      if (!service) continue;
      const b1 = find(results, 'B1', 'rest', name);
      const b1c = find(results, 'B1c', 'rest', name);
      const b0 = find(results, 'B0', 'rest', name);
      const unexpected = service.unexpected + (surface === 'rest' ? [b1, b1c, b0].reduce((sum, other) => sum + (other?.unexpected ?? 0), 0) : 0);
      lines.push(
        `| ${name} | ${surface === 'rest' ? 'REST' : 'GraphQL'} | ${fixed(service.rps)} | ${fixed(service.p50)} | ${fixed(service.p99)} | ${fixed(ratioTo(results, 'B1', surface, name), 2)} | ${fixed(ratioTo(results, 'B1c', surface, name), 2)} | ${fixed(b1?.rps)} | ${fixed(b1?.p99)} | ${fixed(b1c?.rps)} | ${fixed(b1c?.p99)} | ${fixed(b0?.rps)} | ${service.peakRssMb} | ${unexpected} |`,
      );
    }
  }
  lines.push('');
  lines.push(
    'Medians over rounds. B1 is Fastify + mysql2 with a key lookup on every request, B1c the same with a key cache of the service\'s TTL, B0 canned JSON; they serve REST only, so GraphQL rows are compared with their REST figure for the same operation. "Unexpected" counts responses with another status than the scenario expects, and connection errors, over every round (service, and for REST rows the baselines too).',
  );
  const baselineRows = compareBaseline(results);
  if (results.baseline && baselineRows.length > 0) {
    const { ref, commit, subject, nodeModules, setupSeconds } = results.baseline;
    lines.push('');
    lines.push(
      `The change against the baseline, ${ref} = ${commit.slice(0, 12)} ("${subject}"), the service built from that commit (${nodeModules === 'shared' ? "this checkout's node_modules" : 'its own npm ci'}; ${Math.round(setupSeconds)} s to check out and build) and run as the service is, in the same rounds. "× baseline" is the service's figure over the baseline's: req/s above 1, the change is faster; CPU above 1, it costs more:`,
    );
    lines.push('');
    lines.push(
      '| Scenario | Surface | req/s | Baseline req/s | req/s × baseline | p99 ms | Baseline p99 ms | Fixed-rate CPU ms/request | Baseline CPU ms/request | CPU × baseline |',
    );
    lines.push('|---|---|--:|--:|--:|--:|--:|--:|--:|--:|');
    for (const row of baselineRows) {
      lines.push(
        `| ${row.name} | ${row.surface === 'rest' ? 'REST' : 'GraphQL'} | ${fixed(row.service.rps)} | ${fixed(row.baseline.rps)} | ${fixed(row.rpsRatio, 2)} | ${fixed(row.service.p99)} | ${fixed(row.baseline.p99)} | ${fixed(row.cpu?.service, 3)} | ${fixed(row.cpu?.baseline, 3)} | ${fixed(row.cpu && row.cpu.service / row.cpu.baseline, 2)} |`,
      );
    }
  }
  const peerRows = comparePeers(results);
  if (peerRows.length > 0) {
    lines.push('');
    lines.push(
      'GraphQL against its peers, servers a user could pick instead on the same database and key cache (apollo: Apollo Server 5 + type-graphql + TypeORM; yoga: graphql-yoga + graphql-jit + mysql2; mercurius: mercurius with jit + mysql2; bench/README.md "Peers"). Medians over rounds; × B1c against B1c\'s REST figure; "Service ×" is the service\'s req/s over the peer\'s:',
    );
    lines.push('');
    lines.push('| Scenario | System | req/s | p50 ms | p99 ms | × B1c | Service × | Peak RSS MB | Unexpected |');
    lines.push('|---|---|--:|--:|--:|--:|--:|--:|--:|');
    for (const row of peerRows) {
      lines.push(
        `| ${row.name} | ${row.system} | ${fixed(row.rps)} | ${fixed(row.p50)} | ${fixed(row.p99)} | ${fixed(row.ratioToB1c, 2)} | ${fixed(row.serviceRatio, 2)} | ${row.peakRssMb} | ${row.unexpected} |`,
      );
    }
  }
  if (results.halfRate.length > 0) {
    lines.push('');
    lines.push(
      "At half of the slowest system's maximum rate for the operation, so that none is measured under overload (requests sent evenly spaced whether or not earlier ones were answered, same connections; B1c runs the REST operation). CPU ms/request: the server process's user + system CPU time during the measured run (not the warm-up), read from outside (the nanoseconds on CPU of its threads in /proc/<pid>/task/*/schedstat), over the responses received; the median round by CPU:",
    );
    lines.push('');
    lines.push(
      '| Scenario | Surface | Rate req/s | Service p50 / p99 ms | B1c p50 / p99 ms | p99 × B1c | Service CPU ms/request | B1c CPU ms/request | CPU × B1c |',
    );
    lines.push('|---|---|--:|--:|--:|--:|--:|--:|--:|');
    for (const row of results.halfRate) {
      const { service, b1c } = row;
      lines.push(
        `| ${row.name} | ${row.surface === 'rest' ? 'REST' : 'GraphQL'} | ${row.rate} | ${fixed(service.p50, 1)} / ${fixed(service.p99, 1)} | ${fixed(b1c.p50, 1)} / ${fixed(b1c.p99, 1)} | ${fixed(service.p99 / b1c.p99, 2)} | ${fixed(service.cpuMsPerRequest, 3)} | ${fixed(b1c.cpuMsPerRequest, 3)} | ${fixed(service.cpuMsPerRequest / b1c.cpuMsPerRequest, 2)} |`,
      );
    }
    const peerRates = results.halfRate.filter((row) => row.peers && Object.keys(row.peers).length > 0);
    if (peerRates.length > 0) {
      lines.push('');
      lines.push(
        "CPU per request at a fixed rate, GraphQL: the service, each peer and B1c (REST) at the same rate, half of the slowest system's maximum for the operation; \"Service CPU ×\" is the service's CPU per request over that system's:",
      );
      lines.push('');
      lines.push('| Scenario | Rate req/s | System | p50 / p99 ms | CPU ms/request | CPU × B1c | Service CPU × |');
      lines.push('|---|--:|---|--:|--:|--:|--:|');
      for (const row of peerRates) {
        const systems: Array<[string, Measurement]> = [
          ['service', row.service],
          ...PEER_NAMES.flatMap((peer) => (row.peers?.[peer] ? [[peer, row.peers[peer]] as [string, Measurement]] : [])),
          ['B1c', row.b1c],
        ];
        for (const [system, m] of systems) {
          lines.push(
            `| ${row.name} | ${row.rate} | ${system} | ${fixed(m.p50, 1)} / ${fixed(m.p99, 1)} | ${fixed(m.cpuMsPerRequest, 3)} | ${fixed(m.cpuMsPerRequest / row.b1c.cpuMsPerRequest, 2)} | ${system === 'service' ? '–' : fixed(row.service.cpuMsPerRequest / m.cpuMsPerRequest, 2)} |`,
          );
        }
      }
    }
  }
  if (results.scale.length > 0) {
    lines.push('');
    lines.push(
      'Scale curve (REST, one connection, mean / p99 latency in ms; deep page: page 5,000 at 1,000,000 rows, the middle page of smaller tables, reached with its cursor; EXPLAIN: access type and key for list, filtered list, get and the two deep pages):',
    );
    lines.push('');
    lines.push(`| Rows | ${SCALE_QUERIES.join(' | ')} | EXPLAIN |`);
    lines.push(`|--:|${SCALE_QUERIES.map(() => '--:').join('|')}|---|`);
    for (const point of results.scale) {
      const cells = SCALE_QUERIES.map((query) => `${point.latency[query].mean.toFixed(2)} / ${point.latency[query].p99}`);
      const plans = Object.values(point.plans)
        .map((plan) => `${plan.type} ${plan.key}`)
        .join(', ');
      lines.push(`| ${point.rows.toLocaleString('en')} (deep page ${point.deepPage.toLocaleString('en')}) | ${cells.join(' | ')} | ${plans} |`);
    }
  }
  if (results.galera) {
    const { reads, scenarios } = results.galera;
    lines.push('');
    lines.push(
      `On node 1 of a 3-node Galera cluster on this machine (docs/operations.md "Scale-out notes"): the service's getPet statement, one at a time, takes ${fixed(reads.syncWaitOff.mean, 3)} ms (p99 ${fixed(reads.syncWaitOff.p99, 3)}) without the causality wait and ${fixed(reads.syncWaitOn.mean, 3)} ms (p99 ${fixed(reads.syncWaitOn.p99, 3)}) with \`wsrep_sync_wait = 1\`, which the service sets on a Galera node's sessions (${reads.syncWaitOn.reads} reads each). B1c reads without it:`,
    );
    lines.push('');
    lines.push('| Scenario | B1c req/s | Service req/s | × B1c on Galera | × B1c on one server |');
    lines.push('|---|--:|--:|--:|--:|');
    for (const row of scenarios) {
      lines.push(
        `| REST ${row.name} | ${fixed(row.b1c.rps)} | ${fixed(row.service.rps)} | ${fixed(row.service.rps / row.b1c.rps, 2)} | ${fixed(row.oneServerRatio, 2)} |`,
      );
    }
  }
  lines.push(...feedMarkdown(results));
  lines.push('');
  lines.push('Targets:');
  lines.push('');
  for (const check of checkTargets(results)) lines.push(`- ${check.met ? 'met' : '**missed**'}: ${check.target}: ${check.value}`);
  return `${lines.join('\n')}\n`;
}
