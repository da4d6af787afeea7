import { execFileSync } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { generateApiKey } from '../src/auth/api-key-policy';
import { positiveIntegerArgument } from '../src/cli/cli-options';
import { databaseNameOf, siblingDatabaseUrl } from '../test/support/mysql-admin';
import { freePort } from '../test/support/free-port';
import {
  databaseVersion,
  deepPages,
  explainQueries,
  growPets,
  keyEveryVersionAccepts,
  prepareDatabase,
  renumberPets,
  waitUntilStamped,
} from './bench-database';
import { compactResults, historyLine, roundFloats } from './bench.history';
import { type BenchResults, type GaleraResults, type ScenarioRuns, summarise, toMarkdown } from './bench.report';
import {
  type Measurement,
  PEER_NAMES,
  type PeerName,
  type RunningSystem,
  type SystemName,
  cpuTimeMs,
  isPeer,
  measure,
  measureAtRate,
  probe,
  startSystem,
} from './bench.runner';
import { type BaselineCheckout, checkOutBaseline } from './baseline-checkout';
import { measureCausalReads } from './causal-reads';
import { type FeedResults, type FeedSettings, deliveryFailed, feedPhase } from './feed';
import { startGaleraCluster } from '../test/support/mariadb-topology';
import { tracingMarkdown, tracingPhase } from './tracing-cost';
import { FEATURE_VARIANTS, featureMarkdown, featurePhase } from './feature-cost';
import { ALL_ON, type FeatureSwitches, ProductionFeatures } from './production-features';
import { interleavedRounds } from './interleaved-rounds';
import { LIST_QUERIES, SCENARIOS, type Scenario, type ScenarioContext } from './scenarios';
import { API_KEY_CACHE, HEAP_CAP_NODE_OPTION } from '../src/limits';

/**
 * `npm run bench [-- --smoke] [-- --only <regex>] [-- --no-scale] [-- --no-half-rate] [-- --cpu-prof]
 *   [-- --rounds <n>] [-- --duration <seconds>] [-- --systems service,baseline,B1,B1c,B0,apollo,yoga,mercurius] [-- --baseline <git ref>]
 *   [-- --tracing [--tracing-rate <n>]] [-- --features [--features-rate <n>]] [-- --bare]`
 *
 * Seeds 10,000 pets in a fresh MariaDB/MySQL database (BENCH_DATABASE_URL, default
 * mysql://root@127.0.0.1:3306/petstore_bench, or petstore_bench_smoke with --smoke; it is
 * dropped and recreated, so two runs must not share one), then for each round starts fresh processes of
 * the service (dist/src/main.js, LOG_LEVEL=warn, the heap cap of `npm start`, with Redis, trusted documents and a webhook
 * endpoint at a receiver of the bench's: production-features.ts; `--bare`: NODE_ENV=production and none of them)
 * and the baselines B1
 * (Fastify + mysql2, a key lookup per request), B1c (B1 with a key cache of the service's TTL)
 * and B0 (node:http, canned JSON), and the GraphQL peers apollo, yoga and mercurius (bench/peer-*.server.ts),
 * in an order reversed every other round, and runs every
 * scenario against each with autocannon (the baselines: the REST scenario of each operation;
 * the peers: the GraphQL scenarios),
 * 3 rounds of 5 s after a 0.5 s warm-up, 32 connections. The report gives medians over rounds
 * and the service's ratios to B1 and B1c (a GraphQL row to their REST figure) and, on GraphQL, to each peer.
 * Then the fixed-rate phase, in as many rounds, fresh processes, the order reversed every other round: every
 * scenario on B1c, the service, the baseline and each peer (GraphQL) at half of the slowest system's maximum rate for
 * the operation (so none is measured under overload), the median round by CPU, for p50/p99 and the server's CPU time per request (user +
 * system, read from each thread's /proc/<pid>/task/<tid>/schedstat; see cpuTimeMs in bench.runner.ts). Then the scale
 * curve (10k, 100k, 1M rows in BENCH_DATABASE_URL's database + `_scale`). Then, on a 3-node
 * Galera cluster of its own on 127.0.0.1 (galera-4, rsync), the price of causal reads: the
 * getPet statement with `wsrep_sync_wait` 0 and 1, and the service against B1c on node 1
 * for REST get and list-20. Writes
 * bench/results/latest.{md,json} (smoke: smoke.{md,json}; a run with any option narrowing or
 * shortening it: partial.{md,json}) and prints the tables.
 * With `--baseline <git ref>`, that commit is checked out in a git worktree under the system's
 * temporary folder, built, and run as one more system, `baseline`, exactly as the service is, in
 * the same rounds and order (baseline-checkout.ts; bench/README.md "Comparing with another commit").
 * Exits 1 when any response had an unexpected status: the harness is broken, not slow.
 * No thresholds are enforced: targets are reported, met or missed.
 * With `--tracing`, only the tracing phase runs (tracing-cost.ts): the service's CPU time per request with tracing off,
 * on at 10 % and at 100 % sampling, written to bench/results/tracing.{md,json} (bench/README.md "Tracing").
 * With `--features`, only the features phase runs (feature-cost.ts): the service's CPU time per request with every
 * feature on and with each switched off alone, written to bench/results/features.{md,json} (bench/README.md "Features").
 */
/** Every system, in the order of odd rounds; `baseline` runs only with `--baseline`. */
const ALL_SYSTEMS: readonly SystemName[] = ['service', 'baseline', 'B1', 'B1c', 'B0', ...PEER_NAMES];

function positiveNumber(value: string): number {
  const number = Number(value);
  if (!(number > 0)) throw new InvalidArgumentError('must be a positive number.');
  return number;
}

function systemList(value: string): SystemName[] {
  const names = value.split(',');
  const unknown = names.filter((name) => !ALL_SYSTEMS.includes(name as SystemName));
  if (unknown.length > 0) throw new InvalidArgumentError(`unknown system ${unknown.join(', ')}: choose from ${ALL_SYSTEMS.join(', ')}.`);
  return names as SystemName[];
}

const command = new Command('bench')
  .description('Benchmark the built service against three baselines and three GraphQL peers on MariaDB/MySQL (BENCH_DATABASE_URL).')
  .option('--smoke', 'one short round on a database of its own, to check the harness (CI)')
  .option('--only <regex>', 'only the scenarios whose "surface name" matches, e.g. "graphql list"')
  .option('--rounds <n>', 'rounds (default 3; 1 with --smoke)', positiveIntegerArgument)
  .option('--duration <seconds>', 'seconds per measured run (default 5)', positiveNumber)
  .option('--systems <list>', `comma-separated systems to run (default: all of ${ALL_SYSTEMS.join(',')}; baseline only with --baseline)`, systemList)
  .option(
    '--baseline <git ref>',
    'also run the service as built from this commit (a git worktree beside this checkout), as the system "baseline", in the same rounds: the change\'s cost as ratios within one run',
  )
  .option('--no-scale', 'skip the scale curve')
  .option('--no-galera', 'skip the Galera phase (the price of causal reads on a 3-node cluster of its own)')
  .option('--no-half-rate', "skip the fixed-rate phase (p99 and CPU time per request at half of the slowest system's maximum rate)")
  .option(
    '--no-feed',
    "skip the feed phase (the change feed's delivery latency to SSE and WebSocket followers and a webhook endpoint, and the sequencer's cost per create)",
  )
  .option(
    '--feed-clients <n>',
    'followers of each kind (SSE, WebSocket) in the feed phase, beside one webhook endpoint (default 1000; 10 with --smoke)',
    positiveIntegerArgument,
  )
  .option('--feed-rate <n>', 'creates per second in the feed phase (default 200; 50 with --smoke)', positiveIntegerArgument)
  .option('--feed-seconds <seconds>', 'seconds of creates in each delivery run of the feed phase (default 20; 1 with --smoke)', positiveNumber)
  .option('--cpu-prof', 'write a V8 CPU profile of each system to bench/results/profiles/<system>/')
  .option('--tracing', 'only the tracing phase: CPU per request with tracing off, on at 10 % and at 100 % sampling (with --only, --rounds, --duration)')
  .option('--tracing-rate <n>', 'requests per second of each scenario in the tracing phase (default 300; 50 with --smoke)', positiveIntegerArgument)
  .option(
    '--features',
    'only the features phase: CPU per request with every feature on, and with each switched off alone by configuration (with --only, --rounds, --duration)',
  )
  .option('--features-rate <n>', 'requests per second of each scenario in the features phase (default 300; 50 with --smoke)', positiveIntegerArgument)
  .option('--bare', 'start the service (and the baseline) the old way: NODE_ENV=production, no Redis, no trusted documents, no webhook endpoint')
  .showHelpAfterError();
const options = command.parse().opts<{
  smoke?: boolean;
  only?: string;
  rounds?: number;
  duration?: number;
  systems?: SystemName[];
  scale: boolean;
  galera: boolean;
  halfRate: boolean;
  feed: boolean;
  feedClients?: number;
  feedSeconds?: number;
  feedRate?: number;
  cpuProf?: boolean;
  baseline?: string;
  tracing?: boolean;
  tracingRate?: number;
  features?: boolean;
  featuresRate?: number;
  bare?: boolean;
}>();
if (options.features && options.tracing) command.error('error: --features and --tracing are phases of their own: one at a time.');
if (options.features && options.bare) command.error('error: --features measures the production set-up: not with --bare.');
if (options.systems?.includes('baseline') && options.baseline === undefined) command.error('error: the system baseline needs --baseline <git ref>.');
if (options.baseline !== undefined && options.systems && !options.systems.includes('baseline')) {
  command.error('error: --baseline needs the system baseline among --systems.');
}
/** The systems of a run with no `--systems`. */
const SYSTEM_NAMES = ALL_SYSTEMS.filter((name) => name !== 'baseline' || options.baseline !== undefined);
const smoke = options.smoke === true;
const only = options.only === undefined ? undefined : new RegExp(options.only);
const SETTINGS = smoke
  ? { rounds: 1, durationSeconds: 0.4, warmupSeconds: 0.1, connections: 10, pets: 10_000, scaleRows: [10_000, 20_000], scaleSeconds: 0.3 }
  : { rounds: 3, durationSeconds: 5, warmupSeconds: 0.5, connections: 32, pets: 10_000, scaleRows: [10_000, 100_000, 1_000_000], scaleSeconds: 2 };
// For measuring one change quickly: fewer rounds, shorter runs, some systems only.
if (options.rounds !== undefined) SETTINGS.rounds = options.rounds;
if (options.duration !== undefined) SETTINGS.durationSeconds = options.duration;
const SYSTEMS: readonly SystemName[] = options.systems ?? SYSTEM_NAMES;
/** The feed phase (bench/README.md "Feed"): followers of each kind, creates per second and seconds, with Redis and without. */
const FEED: FeedSettings = smoke
  ? { sseClients: 10, wsClients: 10, rate: 50, seconds: 1, sequencerSeconds: 1, redis: [true, false] }
  : { sseClients: 1000, wsClients: 1000, rate: 200, seconds: 20, sequencerSeconds: 10, redis: [true, false] };
if (options.feedClients !== undefined) FEED.sseClients = FEED.wsClients = options.feedClients;
if (options.feedSeconds !== undefined) FEED.seconds = options.feedSeconds;
if (options.feedRate !== undefined) FEED.rate = options.feedRate;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
// Smoke runs (CI) get a database of their own, so that one never drops a full run's tables.
const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? `mysql://root@127.0.0.1:3306/petstore_bench${smoke ? '_smoke' : ''}`;
/** This checkout: the service's build runs from here. */
const ROOT = path.resolve(__dirname, '..', '..');
const RESULTS = path.join(ROOT, 'bench', 'results');
const CANNED_FILE = path.join(os.tmpdir(), `petstore-bench-canned-${process.pid}.json`);

const began = Date.now();
const log = (message: string) => process.stderr.write(`[${((Date.now() - began) / 1000).toFixed(1).padStart(5)} s] ${message}\n`);
const round1 = (value: number) => Math.round(value * 10) / 10;

/** B1c's key cache, the service's own TTL and bound; the GraphQL peers have it too. */
const KEY_CACHE_ENV = { KEY_CACHE_MS: String(API_KEY_CACHE.ttlMs), KEY_CACHE_MAX: String(API_KEY_CACHE.maxEntries) };

/** The script of each GraphQL peer. */
const PEER_SCRIPTS: Record<PeerName, string> = {
  apollo: 'dist/bench/peer-apollo-typegraphql.server.js',
  yoga: 'dist/bench/peer-yoga-jit.server.js',
  mercurius: 'dist/bench/peer-mercurius-jit.server.js',
};

/** With --cpu-prof: node's flags for a V8 CPU profile of `system`, written to bench/results/profiles/<system>/ when it exits. */
function profiling(system: SystemName): { nodeOptions: string[] } {
  return { nodeOptions: options.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.join(RESULTS, 'profiles', system)}`] : [] };
}

/** With `--baseline`: the other commit, checked out and built (main() sets it, and removes it at the end). */
let baselineCheckout: BaselineCheckout | undefined;

/** Without `--bare`: the service's production set-up, Redis, trusted documents and a webhook receiver (main() sets it, and closes it at the end). */
let production: ProductionFeatures | undefined;

/** Seconds a measured run's webhook backlog may take to be delivered before the next run starts (then it is dropped). */
const DRAIN_TIMEOUT_MS = smoke ? 10_000 : 60_000;

/** How to start each system; the service (and the baseline) exactly as in production, rate limits out of the way. */
async function start(system: SystemName, apiKey: string, databaseUrl = DATABASE_URL, env: Record<string, string> = {}): Promise<RunningSystem> {
  if (isPeer(system)) {
    return startSystem(system, PEER_SCRIPTS[system], { NODE_ENV: 'production', DATABASE_URL: databaseUrl, ...KEY_CACHE_ENV }, apiKey, {
      ...profiling(system),
      surface: 'graphql',
    });
  }
  switch (system) {
    case 'service':
      return startService(apiKey, databaseUrl, undefined, env);
    case 'baseline':
      if (!baselineCheckout) throw new Error('the system baseline needs --baseline <git ref>');
      return startService(apiKey, databaseUrl, baselineCheckout, env);
    case 'B1':
      return startSystem('B1', 'dist/bench/baseline-fastify-mysql.server.js', { DATABASE_URL: databaseUrl }, apiKey, profiling(system));
    case 'B1c':
      return startSystem('B1c', 'dist/bench/baseline-fastify-mysql.server.js', { DATABASE_URL: databaseUrl, ...KEY_CACHE_ENV }, apiKey, profiling(system));
    case 'B0':
      return startSystem('B0', 'dist/bench/baseline-http.server.js', { API_KEY: apiKey, CANNED_FILE }, apiKey, profiling(system));
  }
}

/**
 * Starts the service as the main bench runs it (bench/README.md "Method"): rate limits out of the way, the heap cap of
 * `npm start`, LOG_LEVEL=warn, and `switches`' features of the production set-up (production-features.ts; default every
 * one: Redis, trusted documents, the webhook dispatcher with its endpoint at the bench's receiver, registered anew once
 * the service has started when it delivers, on the bench's database only); `bare` (or `--bare`), NODE_ENV=production and
 * none of them. With `baseline`, the service built in that worktree, as the system `baseline`. `env` is added last.
 */
async function startService(
  apiKey: string,
  databaseUrl = DATABASE_URL,
  baseline?: BaselineCheckout,
  env: Record<string, string> = {},
  switches: FeatureSwitches | 'bare' = ALL_ON,
): Promise<RunningSystem> {
  const name = baseline ? 'baseline' : 'service';
  const directory = baseline?.directory ?? ROOT;
  const features = production && switches !== 'bare' ? production.envOf(directory, switches) : { NODE_ENV: 'production', LOG_LEVEL: 'warn' };
  const delivers = production !== undefined && switches !== 'bare' && databaseUrl === DATABASE_URL && production.delivers(directory, switches);
  // No endpoint while a process that does not deliver runs: its pets would be left owed.
  if (!delivers) await production?.removeEndpoint();
  const system = await startSystem(
    name,
    'dist/src/main.js',
    {
      ...features,
      DATABASE_URL: databaseUrl,
      RATE_LIMIT_MAX: '1000000000',
      RATE_LIMIT_UNAUTHENTICATED_MAX: '1000000000',
      // A second listener (metrics), if the service has one, must not collide.
      METRICS_PORT: String(await freePort()),
      // The heap cap of `npm start` and the Docker image, placed as they place it.
      NODE_OPTIONS: `${HEAP_CAP_NODE_OPTION} ${process.env.NODE_OPTIONS ?? ''}`.trim(),
      ...env,
    },
    apiKey,
    { ...profiling(name), ...(baseline && { cwd: baseline.directory }) },
  );
  if (!baseline && databaseUrl === DATABASE_URL) {
    // The pets a build without the feed (or the seed) left unstamped are stamped at start-up, in batches: not in a measured run.
    const stamped = await waitUntilStamped(databaseUrl);
    if (stamped.ms > 1000 || stamped.timedOut)
      log(`  service: ${stamped.timedOut ? 'still stamping' : 'stamped the waiting pets'} after ${(stamped.ms / 1000).toFixed(1)} s`);
  }
  // Once every pet is stamped: the endpoint's deliveries start at the head, with no backlog.
  if (delivers) await production!.freshEndpoint();
  return system;
}

/** This checkout's commit, with `+` when its tree has uncommitted changes (the service measured is the working tree). */
function checkoutCommit(): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();
  return `${git('rev-parse', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? '+' : ''}`;
}

/** Records the service's REST answers for B0 to replay. */
async function captureCanned(service: RunningSystem, context: ScenarioContext): Promise<void> {
  const rest = (name: string) => SCENARIOS.find((s) => s.surface === 'rest' && s.name === name)!;
  const lists: Record<string, string> = {};
  for (const [name, query] of Object.entries(LIST_QUERIES)) lists[query] = await probe(service, rest(name), context);
  const canned = {
    get: await probe(service, rest('get'), context),
    create: await probe(service, rest('create'), context),
    unauthorized: await probe(service, rest('unauthorized'), context),
    lists,
  };
  writeFileSync(CANNED_FILE, JSON.stringify(canned));
}

/** Probes, warms up, then measures one scenario: as fast as it answers, or at `rate` requests per second. */
async function run(
  system: RunningSystem,
  scenario: Scenario,
  context: ScenarioContext,
  rate?: number,
  connections = SETTINGS.connections,
): Promise<Measurement> {
  await probe(system, scenario, context);
  const load = (duration: number) =>
    rate === undefined
      ? measure(system, scenario, context, { duration, connections })
      : measureAtRate(system, scenario, context, { duration, connections, rate });
  if (SETTINGS.warmupSeconds > 0) await load(SETTINGS.warmupSeconds);
  const result = await load(SETTINGS.durationSeconds);
  if ((system.name === 'service' || system.name === 'baseline') && production) {
    // The webhook deliveries the run's creates left owed are made before the next run, not in it, and their CPU counts
    // as the run's: a create's price includes its delivery.
    const cpuBefore = cpuTimeMs(system.pid);
    const drained = await production.drain(DRAIN_TIMEOUT_MS);
    if (drained.owed > 0 && !drained.timedOut) {
      result.afterRunCpuMs = cpuTimeMs(system.pid) - cpuBefore;
      result.cpuMs += result.afterRunCpuMs;
      result.cpuMsPerRequest = result.total > 0 ? result.cpuMs / result.total : NaN;
    }
  }
  log(
    `  ${system.name.padEnd(8)} ${scenario.surface.padEnd(7)} ${scenario.name.padEnd(12)} ${Math.round(result.rps).toString().padStart(6)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms  CPU ${result.cpuMsPerRequest.toFixed(3)} ms/req${result.afterRunCpuMs === undefined ? '' : ` (${result.afterRunCpuMs.toFixed(0)} ms of it delivering webhooks after the run)`}  RSS ${result.peakRssMb} MB${result.unexpected ? `  UNEXPECTED ${result.unexpected} ${JSON.stringify(result.statuses)}` : ''}`,
  );
  return result;
}

/** Checks out and builds the baseline when asked, runs the bench, then removes the baseline's worktree. */
async function main(): Promise<void> {
  const startedAt = new Date();
  const loadBefore = os.loadavg()[0];
  if (options.baseline !== undefined) baselineCheckout = await checkOutBaseline(ROOT, options.baseline, log);
  try {
    if (!options.bare) production = await ProductionFeatures.start({ databaseUrl: DATABASE_URL, redisUrl: REDIS_URL, root: ROOT, log });
    await bench(startedAt, loadBefore);
  } finally {
    if (production) {
      log(`Production set-up: the webhook receiver took ${await production.deliveries()} deliveries`);
      await production.close();
    }
    if (baselineCheckout) {
      await baselineCheckout.remove();
      log(`Baseline: worktree ${baselineCheckout.directory} removed`);
    }
  }
}

/**
 * What a phase run on its own (`--tracing`, `--features`) starts from: the database seeded, the scenarios' context, its
 * scenarios (`--only`, else `defaults`) and its rounds (`--rounds`, else 3; 1 with --smoke).
 */
async function seedForPhase(defaults: RegExp): Promise<{ apiKey: string; context: ScenarioContext; scenarios: Scenario[]; rounds: number }> {
  log(`Seeding ${SETTINGS.pets.toLocaleString('en')} pets into ${DATABASE_URL}`);
  const apiKey = await prepareDatabase(DATABASE_URL, SETTINGS.pets);
  const context: ScenarioContext = { apiKey, badKey: generateApiKey(), petCount: SETTINGS.pets };
  const scenarios = SCENARIOS.filter((s) => (only ?? defaults).test(`${s.surface} ${s.name}`));
  return { apiKey, context, scenarios, rounds: options.rounds ?? (smoke ? 1 : 3) };
}

/**
 * Writes a phase's table and its JSON to bench/results/<name>.{md,json} (`<name>-smoke` with --smoke), prints the table,
 * and fails the run (exit code 1) when a variant of a row had an unexpected status or no response.
 */
function reportPhase(
  name: string,
  markdown: string,
  json: unknown,
  rows: readonly { surface: string; name: string; variants: Record<string, Measurement> }[],
): void {
  mkdirSync(RESULTS, { recursive: true });
  const base = path.join(RESULTS, smoke ? `${name}-smoke` : name);
  writeFileSync(`${base}.md`, markdown);
  writeFileSync(`${base}.json`, `${JSON.stringify(json, roundFloats, 2)}\n`);
  process.stdout.write(markdown);
  log(`Written to ${path.relative(process.cwd(), base)}.md and .json`);
  const unexpected = rows.flatMap((row) =>
    Object.entries(row.variants)
      .filter(([, m]) => m.unexpected > 0 || m.total === 0)
      .map(([variant, m]) => `${row.surface} ${row.name} ${variant} ${JSON.stringify(m.statuses)}`),
  );
  if (unexpected.length > 0) {
    log(`Harness failure: unexpected statuses or no responses in ${unexpected.join('; ')}`);
    process.exitCode = 1;
  }
}

/** The scenarios of the tracing phase unless --only says otherwise: a read and a write on each surface. */
const TRACING_SCENARIOS = /^(rest|graphql) (list-20|create)$/;

/** `--tracing`: the tracing phase alone (tracing-cost.ts), its table printed and written to bench/results/tracing.{md,json}. */
async function tracingBench(): Promise<void> {
  const { apiKey, context, scenarios, rounds } = await seedForPhase(TRACING_SCENARIOS);
  const rows = await tracingPhase({
    start: (env) => startService(apiKey, DATABASE_URL, undefined, env),
    run: (system, scenario, rate) => run(system, scenario, context, rate),
    scenarios,
    rate: options.tracingRate ?? (smoke ? 50 : 300),
    rounds,
    log,
  });
  reportPhase(
    'tracing',
    tracingMarkdown(rows, rounds, SETTINGS.durationSeconds),
    { startedAt: new Date(began).toISOString(), node: process.version, rows },
    rows,
  );
}

/** The scenarios of the features phase unless --only says otherwise: get, list-20 and create on each surface. */
const FEATURE_SCENARIOS = /^(rest|graphql) (get|list-20|create)$/;

/** `--features`: the features phase alone (feature-cost.ts), its table printed and written to bench/results/features.{md,json}. */
async function featuresBench(startedAt: Date, loadBefore: number): Promise<void> {
  const { apiKey, context, scenarios, rounds } = await seedForPhase(FEATURE_SCENARIOS);
  const rows = await featurePhase({
    start: (switches) => startService(apiKey, DATABASE_URL, undefined, {}, switches),
    run: (system, scenario, rate) => run(system, scenario, context, rate),
    scenarios,
    rate: options.featuresRate ?? (smoke ? 50 : 300),
    rounds,
    log,
  });
  const machine = {
    CPU: `${os.cpus().length} × ${os.cpus()[0]?.model.trim()}`,
    Node: process.version,
    database: await databaseVersion(DATABASE_URL),
    'load average (1 min) before/after': `${round1(loadBefore)}/${round1(os.loadavg()[0])}`,
    seconds: Math.round((Date.now() - startedAt.getTime()) / 1000),
  };
  const durationSeconds = SETTINGS.durationSeconds;
  reportPhase(
    'features',
    featureMarkdown(rows, { rounds, durationSeconds, machine }),
    { startedAt: startedAt.toISOString(), machine, rounds, durationSeconds, variants: FEATURE_VARIANTS, rows },
    rows,
  );
}

async function bench(startedAt: Date, loadBefore: number): Promise<void> {
  if (options.tracing) return tracingBench();
  if (options.features) return featuresBench(startedAt, loadBefore);
  log(`Seeding ${SETTINGS.pets.toLocaleString('en')} pets into ${DATABASE_URL}`);
  // Against a baseline, keys in the format every version accepts, so both systems look up the same keys.
  const everyVersion = options.baseline !== undefined;
  const apiKey = await prepareDatabase(DATABASE_URL, SETTINGS.pets, { everyVersion });
  const context: ScenarioContext = { apiKey, badKey: everyVersion ? keyEveryVersionAccepts() : generateApiKey(), petCount: SETTINGS.pets };
  const scenarios = SCENARIOS.filter((s) => !only || only.test(`${s.surface} ${s.name}`));
  // The baselines serve REST only: the REST scenario of every operation selected, on either surface.
  const baselineScenarios = SCENARIOS.filter((s) => s.surface === 'rest' && scenarios.some((selected) => selected.name === s.name));
  // The peers serve GraphQL only: the GraphQL scenarios selected.
  const peerScenarios = scenarios.filter((s) => s.surface === 'graphql');
  const scenariosOf = (name: SystemName) => (name === 'service' || name === 'baseline' ? scenarios : isPeer(name) ? peerScenarios : baselineScenarios);
  const runs: ScenarioRuns[] = [];
  const record = (system: SystemName, scenario: Scenario, measurement: Measurement) => {
    let entry = runs.find((r) => r.system === system && r.surface === scenario.surface && r.name === scenario.name);
    if (!entry) runs.push((entry = { system, surface: scenario.surface, name: scenario.name, rounds: [] }));
    entry.rounds.push(measurement);
  };

  // A B A B: fresh processes every round, the order reversed every other round.
  for (let round = 0; round < SETTINGS.rounds; round++) {
    const order = (round % 2 === 0 ? SYSTEM_NAMES : [...SYSTEM_NAMES].reverse()).filter((name) => SYSTEMS.includes(name) && scenariosOf(name).length > 0);
    log(`Round ${round + 1} of ${SETTINGS.rounds}: ${order.join(', ')}`);
    for (const name of order) {
      const system = await start(name, apiKey);
      try {
        if (name === 'service' && round === 0) await captureCanned(system, context);
        for (const scenario of scenariosOf(name)) {
          record(name, scenario, await run(system, scenario, context));
        }
      } finally {
        await system.stop();
      }
    }
  }

  // The fixed-rate phase: every scenario at one rate per operation that every system measured sustains (half of the
  // lowest maximum of the main rounds' medians, B1c's included), so no system's CPU per request is read under overload;
  // as many rounds as the main phase, fresh processes, the order reversed every other round; the median round by CPU.
  const halfRate: BenchResults['halfRate'] = [];
  if (scenarios.length > 0 && SYSTEMS.includes('B1c') && SYSTEMS.includes('service') && options.halfRate) {
    const rateOf = (name: string) => {
      const maxima = runs.filter((r) => r.name === name).map((r) => summarise(r)!.rps);
      return Math.max(1, Math.round(Math.min(...maxima) / 2));
    };
    log('At half of the slowest maximum rate of each operation');
    const kept = await interleavedRounds({
      variants: SYSTEM_NAMES.filter((name) => SYSTEMS.includes(name) && name !== 'B1' && name !== 'B0' && scenariosOf(name).length > 0),
      nameOf: (name) => name,
      scenariosOf,
      start: (name) => start(name, apiKey),
      run: (system, scenario) => run(system, scenario, context, rateOf(scenario.name)),
      rounds: SETTINGS.rounds,
      label: 'Fixed rate',
      log,
    });
    const restOf = (name: string) => SCENARIOS.find((s) => s.surface === 'rest' && s.name === name)!;
    for (const scenario of scenarios) {
      const peers = Object.fromEntries(
        PEER_NAMES.flatMap((peer) => {
          const m = scenario.surface === 'graphql' ? kept(peer, scenario) : undefined;
          return m ? [[peer, m]] : [];
        }),
      );
      const baseline = kept('baseline', scenario);
      halfRate.push({
        name: scenario.name,
        surface: scenario.surface,
        rate: rateOf(scenario.name),
        b1c: kept('B1c', restOf(scenario.name))!,
        service: kept('service', scenario)!,
        ...(baseline && { baseline }),
        ...(Object.keys(peers).length > 0 && { peers }),
      });
    }
  }

  // The scale curve: one connection, so latency is the cost of one request.
  const scale: BenchResults['scale'] = [];
  if (options.scale) {
    const scaleUrl = siblingDatabaseUrl(DATABASE_URL, `${databaseNameOf(DATABASE_URL)}_scale`);
    const scaleKey = await prepareDatabase(scaleUrl, SETTINGS.scaleRows[0]);
    const service = await start('service', scaleKey, scaleUrl);
    try {
      for (const rows of SETTINGS.scaleRows) {
        const began = Date.now();
        await growPets(scaleUrl, rows);
        // The copied rows have no feed position yet: the service stamps them in batches, before the latency is measured.
        const stamped = await waitUntilStamped(scaleUrl, 600_000);
        if (stamped.ms > 1000) log(`  the service stamped the new rows in ${(stamped.ms / 1000).toFixed(1)} s`);
        log(`Scale curve at ${rows.toLocaleString('en')} rows (grown in ${((Date.now() - began) / 1000).toFixed(1)} s)`);
        const scaleContext: ScenarioContext = { ...context, apiKey: scaleKey, petCount: rows };
        const list = (label: string, query: string): [string, Scenario] => [
          label,
          {
            name: label,
            surface: 'rest',
            expected: [200],
            requests: ({ apiKey: key }) => [{ method: 'GET', path: `/v1/pets${query}`, headers: { authorization: `Bearer ${key}` } }],
          },
        ];
        const deep = await deepPages(scaleUrl, rows);
        log(`  deep pages: page ${deep.page.toLocaleString('en')} (after id ${deep.all.afterId}; sold: after id ${deep.sold.afterId})`);
        const queries: Array<[string, Scenario]> = [
          list('list limit=1', '?limit=1'),
          list('list limit=20', '?limit=20'),
          list('list limit=100', '?limit=100'),
          list('deep page limit=100', `?limit=100&after=${deep.all.cursor}`),
          list('list status limit=20', '?status=sold&limit=20'),
          list('deep page status limit=20', `?status=sold&limit=20&after=${deep.sold.cursor}`),
          ['get', SCENARIOS.find((s) => s.surface === 'rest' && s.name === 'get')!],
        ];
        const latency: Record<string, Measurement> = {};
        for (const [label, scenario] of queries) {
          await measure(service, scenario, scaleContext, { duration: SETTINGS.warmupSeconds, connections: 1 });
          latency[label] = await measure(service, scenario, scaleContext, { duration: SETTINGS.scaleSeconds, connections: 1 });
          log(
            `  ${label.padEnd(22)} mean ${latency[label].mean.toFixed(2)} ms  p99 ${latency[label].p99} ms${latency[label].unexpected ? `  UNEXPECTED ${JSON.stringify(latency[label].statuses)}` : ''}`,
          );
        }
        scale.push({ rows, deepPage: deep.page, plans: await explainQueries(scaleUrl, deep), latency });
      }
    } finally {
      await service.stop();
    }
  }

  let feed: FeedResults | undefined;
  if (options.feed && SYSTEMS.includes('service')) {
    feed = await feedPhase({
      // The feed's own set-up (bench/README.md "Feed"): with and without Redis, its own webhook endpoint and receiver.
      start: (system, env, url) => startService(apiKey, url, system === 'baseline' ? baselineCheckout : undefined, env, 'bare'),
      directory: (system) => (system === 'baseline' && baselineCheckout ? baselineCheckout.directory : ROOT),
      databaseUrl: DATABASE_URL,
      context,
      settings: FEED,
      baseline: SYSTEMS.includes('baseline'),
      redisUrl: REDIS_URL,
      log,
    });
  }

  const galera = options.galera ? await galeraPhase(runs) : undefined;

  const results: BenchResults = {
    startedAt: startedAt.toISOString(),
    mode: smoke ? 'smoke' : 'full',
    seconds: (Date.now() - startedAt.getTime()) / 1000,
    machine: {
      CPU: `${os.cpus().length} × ${os.cpus()[0]?.model.trim()}`,
      RAM: `${round1(os.totalmem() / 2 ** 30)} GiB`,
      OS: `${os.type()} ${os.release()}`,
      Node: process.version,
      database: await databaseVersion(DATABASE_URL),
      'load average (1 min) before/after': `${round1(loadBefore)}/${round1(os.loadavg()[0])}`,
    },
    settings: {
      rounds: SETTINGS.rounds,
      durationSeconds: SETTINGS.durationSeconds,
      warmupSeconds: SETTINGS.warmupSeconds,
      connections: SETTINGS.connections,
      pets: SETTINGS.pets,
      service: production
        ? 'the production set-up (Redis, trusted documents, one webhook endpoint; NODE_ENV=test for the webhook, bench/README.md "Method")'
        : 'bare (--bare: NODE_ENV=production, no Redis, no trusted documents, no webhook endpoint)',
    },
    ...(baselineCheckout && {
      baseline: {
        ref: baselineCheckout.ref,
        commit: baselineCheckout.commit,
        subject: baselineCheckout.subject,
        nodeModules: baselineCheckout.nodeModules,
        setupSeconds: baselineCheckout.setupSeconds,
      },
    }),
    runs,
    halfRate,
    scale,
    ...(feed && { feed }),
    ...(galera && { galera }),
  };
  const markdown = toMarkdown(results);
  mkdirSync(RESULTS, { recursive: true });
  const partial =
    only !== undefined ||
    options.rounds !== undefined ||
    options.duration !== undefined ||
    SYSTEMS.length < SYSTEM_NAMES.length ||
    !options.scale ||
    !options.galera ||
    !options.halfRate ||
    !options.feed ||
    options.feedClients !== undefined ||
    options.feedSeconds !== undefined ||
    options.feedRate !== undefined;
  // A run beside another commit measures a change, not the service: never the latest results.
  const name = smoke ? 'smoke' : baselineCheckout ? 'baseline' : partial ? 'partial' : 'latest';
  const base = path.join(RESULTS, name);
  writeFileSync(`${base}.md`, markdown);
  writeFileSync(`${base}.json`, `${JSON.stringify(compactResults(results), roundFloats, 2)}\n`);
  // Every round of every system, for whoever wants the samples: not committed (bench/.gitignore).
  const raw = path.join(RESULTS, 'raw', `${name}-${results.startedAt.replace(/[:.]/g, '-')}.json`);
  mkdirSync(path.dirname(raw), { recursive: true });
  writeFileSync(raw, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(markdown);
  log(`Written to ${path.relative(process.cwd(), base)}.md and .json, every round to ${path.relative(process.cwd(), raw)}`);
  if (name === 'latest') {
    const history = path.join(RESULTS, 'history.md');
    appendFileSync(history, `${historyLine(results, checkoutCommit())}\n`);
    log(`One line added to ${path.relative(process.cwd(), history)}`);
  }

  const unexpected = [
    ...runs.flatMap((r) => r.rounds.map((m) => ({ what: `${r.system} ${r.surface} ${r.name}`, m }))),
    ...halfRate.flatMap((r) => [
      { what: `half-rate B1c ${r.name}`, m: r.b1c },
      { what: `half-rate service ${r.surface} ${r.name}`, m: r.service },
      ...(r.baseline ? [{ what: `half-rate baseline ${r.surface} ${r.name}`, m: r.baseline }] : []),
      ...Object.entries(r.peers ?? {}).map(([peer, m]) => ({ what: `half-rate ${peer} ${r.name}`, m })),
    ]),
    ...scale.flatMap((p) => Object.entries(p.latency).map(([label, m]) => ({ what: `scale ${p.rows} ${label}`, m }))),
    ...(feed?.variants ?? []).map((variant) => ({ what: `feed creates (${variant.redis ? 'Redis' : 'no Redis'})`, m: variant.creates })),
    ...(galera?.scenarios ?? []).flatMap((row) => [
      { what: `Galera B1c ${row.name}`, m: row.b1c },
      { what: `Galera service ${row.name}`, m: row.service },
    ]),
  ].filter(({ m }) => m.unexpected > 0 || m.total === 0);
  if (unexpected.length > 0) {
    log(`Harness failure: unexpected statuses or no responses in ${unexpected.map(({ what, m }) => `${what} ${JSON.stringify(m.statuses)}`).join('; ')}`);
    process.exitCode = 1;
  }
  const failedDeliveries = (feed?.variants ?? []).flatMap((variant) =>
    variant.deliveries
      .filter(deliveryFailed)
      .map(
        (d) =>
          `${d.kind} ${variant.redis ? 'with' : 'without'} Redis: ${JSON.stringify({ missed: d.missed, duplicates: d.duplicates, outOfOrder: d.outOfOrder, failed: d.failed, ended: d.ended, failures: d.failures })}`,
      ),
  );
  if (failedDeliveries.length > 0) {
    log(`Feed failure: events missed, repeated or out of order, or followers that could not follow: ${failedDeliveries.join('; ')}`);
    process.exitCode = 1;
  }
}

/**
 * On node 1 of a 3-node Galera cluster of the bench's own, seeded like the main database: the
 * getPet statement with and without the causality wait the service sets there, then B1c (no
 * causality wait) and the service on REST get and list-20, one round each.
 *
 * @param runs - the main rounds, for the same scenarios' ratio to B1c on one server.
 */
async function galeraPhase(runs: ScenarioRuns[]): Promise<GaleraResults> {
  log('Galera: starting a 3-node cluster');
  const cluster = await startGaleraCluster();
  try {
    const url = siblingDatabaseUrl(cluster.nodes[0].url, 'petstore_bench_galera');
    const apiKey = await prepareDatabase(url, SETTINGS.pets);
    await renumberPets(url);
    const context: ScenarioContext = { apiKey, badKey: generateApiKey(), petCount: SETTINGS.pets };
    const reads = await measureCausalReads(url, { reads: smoke ? 400 : 4000, petCount: SETTINGS.pets });
    log(
      `  getPet statement, one at a time: mean ${reads.syncWaitOff.mean.toFixed(3)} ms without the causality wait, ${reads.syncWaitOn.mean.toFixed(3)} ms with it`,
    );
    const scenarios = SCENARIOS.filter((s) => s.surface === 'rest' && (s.name === 'get' || s.name === 'list-20'));
    const measured: Record<'B1c' | 'service', Record<string, Measurement>> = { B1c: {}, service: {} };
    for (const name of ['B1c', 'service'] as const) {
      const system = await start(name, apiKey, url);
      try {
        for (const scenario of scenarios) measured[name][scenario.name] = await run(system, scenario, context);
      } finally {
        await system.stop();
      }
    }
    const oneServerRatio = (name: string) => {
      const [service, b1c] = [
        summarise(runs.find((r) => r.system === 'service' && r.surface === 'rest' && r.name === name)),
        summarise(runs.find((r) => r.system === 'B1c' && r.name === name)),
      ];
      return service && b1c ? service.rps / b1c.rps : undefined;
    };
    return {
      reads,
      scenarios: scenarios.map(({ name }) => ({ name, b1c: measured.B1c[name], service: measured.service[name], oneServerRatio: oneServerRatio(name) })),
    };
  } finally {
    await cluster.stop();
  }
}

main().catch((error: unknown) => {
  log(`Benchmark failed: ${String((error as Error).stack ?? error)}`);
  process.exitCode = 1;
});
