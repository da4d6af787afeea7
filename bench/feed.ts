import { type ChildProcess, execFile, fork } from 'node:child_process';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import { createApiKeys, feedPositions, waitUntilStamped } from './bench-database';
import { type Measurement, type RunningSystem, measureAtRate } from './bench.runner';
import type { FeedClientsReply, FeedClientsRequest, FeedClientsSetup, FeedDelivery, FollowerKind } from './feed-clients';
import { type StatementTally, StatementCounter } from './mysql-statement-counter';
import { SCENARIOS, type ScenarioContext } from './scenarios';
import { FOLLOWER_LIMITS, SUBSCRIPTION_LIMITS } from '../src/limits';

/** How large the feed phase is (bench/README.md "Feed"). */
export interface FeedSettings {
  sseClients: number;
  wsClients: number;
  /** Creates per second, evenly spaced (open loop), and for how long. */
  rate: number;
  seconds: number;
  /** Seconds of creates at `rate` through the statement counter, per system. */
  sequencerSeconds: number;
  /** The delivery runs: with REDIS_URL (true), without (false). */
  redis: boolean[];
}

/** One delivery run: the service with `sseClients` + `wsClients` followers and one webhook endpoint while pets are created at `rate`. */
export interface FeedVariant {
  redis: boolean;
  rate: number;
  seconds: number;
  /** The WebSocket subscription followed: `petEvents` when the build has it, else `petCreated`. */
  subscription: 'petEvents' | 'petCreated';
  /** Why SSE was not measured (the build has no `GET /v1/events` stream), when it was not. */
  sseMissing?: string;
  /** Why the webhook endpoint was not measured (the build has no webhook CLI to register it with), when it was not. */
  webhookMissing?: string;
  /** Seconds to open every client; milliseconds from the last create's answer until every live client had the last event. */
  connectSeconds: number;
  drainMs: number;
  /** The service died during the creates (its last output, out of memory say, is in the bench's log). */
  serviceExited: boolean;
  /** The creates (REST POST /v1/pets), with the server's CPU over them. */
  creates: Measurement;
  deliveries: FeedDelivery[];
  /** Deliveries to the SSE and WebSocket followers per second, and per core of the server, over the creates. */
  fanOut: FanOut;
}

/**
 * The fan-out of one delivery run (bench/README.md "Feed"): every event each SSE and WebSocket follower received of the
 * measured creates (duplicates not counted), over the creates' window, the wall time between the two reads of the
 * server's CPU time, and over the cores the server used in it (its CPU seconds per wall second).
 */
export interface FanOut {
  /** Events received by the SSE and WebSocket followers, each follower's each event once. */
  deliveries: number;
  /** `deliveries` per second of the creates' window. */
  perSecond: number;
  /** The server's CPU seconds per wall second over that window. */
  cores: number;
  /** `perSecond` over `cores`: events per second per core (NaN when the CPU time was unreadable). */
  perCore: number;
}

/** The fan-out of a run whose creates measured `creates` and whose followers reported `deliveries` (webhooks left out). */
export function fanOutOf(creates: Pick<Measurement, 'cpuMs' | 'cpuWindowMs'>, deliveries: readonly FeedDelivery[]): FanOut {
  const delivered = deliveries.filter((d) => d.kind === 'sse' || d.kind === 'ws').reduce((sum, d) => sum + d.received - d.duplicates, 0);
  const perSecond = delivered / (creates.cpuWindowMs / 1000);
  const cores = creates.cpuMs / creates.cpuWindowMs;
  return { deliveries: delivered, perSecond, cores, perCore: perSecond / cores };
}

/** The target of issue 43's fan-out: events per second per core (SSE and WebSocket together) at a p99 of each within `p99Ms`. */
export const FAN_OUT_TARGET = { perCore: 20_000, p99Ms: 200 } as const;

/** What the sequencer cost while one system took creates at a fixed rate, seen through the statement counter. */
export interface SequencerCost {
  system: 'service' | 'baseline';
  rate: number;
  seconds: number;
  /** Creates answered 201. */
  creates: number;
  /** The feed's head moved by this much (0 for a build without the feed). */
  stamped: number;
  /** Every statement the system sent during the run, by kind. */
  statements: Array<{ kind: string } & StatementTally>;
  /** The sequencer's statements (lease, checks, stamp transactions with their SET/START/COMMIT) and their time. */
  sequencer: StatementTally;
  /** Transactions that stamped, and their time from first statement to COMMIT's answer. */
  stampTransactions: StatementTally;
  /** The server's CPU time per create at this rate, milliseconds (its timers' fixed cost per second included). */
  cpuMsPerCreate: number;
}

export interface FeedResults {
  variants: FeedVariant[];
  sequencer: SequencerCost[];
}

/** How the report and the log name each kind of follower. */
export const FOLLOWER_LABELS: Readonly<Record<FollowerKind, string>> = { sse: 'SSE', ws: 'WS', webhook: 'webhook' };

/** Whether a delivery went wrong: a miss, a duplicate, an event out of order, or a client that could not follow. */
export const deliveryFailed = (d: FeedDelivery) => d.missed > 0 || d.duplicates > 0 || d.outOfOrder > 0 || d.failed > 0 || d.ended > 0;

/** The kinds of statement the sequencer sends (src/events/pet-feed.repository.ts); the transactions' own are counted per stamp transaction. */
const SEQUENCER_KINDS = ['sequencer: claim lease', 'sequencer: any unstamped?', 'sequencer: release lease'];
const STAMP_KINDS = ['sequencer: lock head', 'sequencer: unstamped batch', 'sequencer: stamp', 'sequencer: move head'];

/** Names a statement (mysql2 sends the values inlined): the feed's by what they do, the rest by their first words with literals elided. */
export function classifyStatement(sql: string): string {
  const text = sql.replace(/\s+/g, ' ').trim();
  const rules: Array<[RegExp, string]> = [
    [/^SET TRANSACTION/i, 'SET TRANSACTION'],
    [/^(START TRANSACTION|BEGIN)/i, 'START TRANSACTION'],
    [/^COMMIT/i, 'COMMIT'],
    [/^ROLLBACK/i, 'ROLLBACK'],
    // The names of pet_feed's statements are quoted or not: TypeORM's query builders quote them, and a baseline built
    // before they did may not.
    [/^UPDATE `?pet_feed`? SET `?leader`? = '[^']*', `?lease_expires_at`?/i, 'sequencer: claim lease'],
    [/^UPDATE `?pet_feed`? SET `?leader`? = NULL/i, 'sequencer: release lease'],
    [/^SELECT id FROM pet WHERE seq IS NULL LIMIT 1$/i, 'sequencer: any unstamped?'],
    [/FROM `?pet_feed`? .*WHERE .*name`? = .* FOR UPDATE/i, 'sequencer: lock head'],
    [/^SELECT id FROM pet WHERE seq IS NULL ORDER BY id/i, 'sequencer: unstamped batch'],
    [/^UPDATE pet SET seq = CASE/i, 'sequencer: stamp'],
    [/^UPDATE `?pet_feed`? SET `?head`?/i, 'sequencer: move head'],
    [/^SELECT [^(]*\bhead`? [^(]*FROM `?pet_feed`?/i, 'feed: head'],
    [/seq`? > .*ORDER BY .*seq/i, 'feed: read after (fan-out, replay)'],
    [/^INSERT INTO `?pet`? ?\(/i, 'create: INSERT pet'],
  ];
  for (const [pattern, kind] of rules) if (pattern.test(text)) return kind;
  return text
    .replace(/'(?:[^'\\]|\\.)*'/g, '?')
    .replace(/\b\d+\b/g, '?')
    .slice(0, 80);
}

/** One request to a feed-clients process and its answer (requests are sent one at a time per process). */
function ask<T extends FeedClientsReply['type']>(child: ChildProcess, request: FeedClientsRequest, type: T): Promise<Extract<FeedClientsReply, { type: T }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (reply: FeedClientsReply) => {
      if (reply.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(reply as Extract<FeedClientsReply, { type: T }>);
    };
    const onExit = (code: number | null) => reject(new Error(`feed clients exited (${code}) before answering ${request.type}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send(request);
  });
}

/** Whether the build serves the SSE stream (`GET /v1/events`, `Accept: text/event-stream`): undefined if so, else why not. */
function probeSse(system: RunningSystem, apiKey: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const request = http.get(`${system.url}/v1/events`, { headers: { authorization: `Bearer ${apiKey}`, accept: 'text/event-stream' } }, (response) => {
      const type = String(response.headers['content-type'] ?? '');
      resolve(response.statusCode === 200 && type.startsWith('text/event-stream') ? undefined : `GET /v1/events answered ${response.statusCode} ${type}`);
      request.destroy();
    });
    request.on('error', (error) => resolve(`GET /v1/events: ${error.message}`));
  });
}

/** The subscription of `events-graphql`, `petEvents`, if the build has it (an `error` message within a second says not); else `petCreated`. */
function probeSubscription(system: RunningSystem, apiKey: string): Promise<'petEvents' | 'petCreated'> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${system.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws');
    const done = (answer: 'petEvents' | 'petCreated') => {
      clearTimeout(timer);
      socket.terminate();
      resolve(answer);
    };
    const timer = setTimeout(() => done('petEvents'), 1500);
    socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${apiKey}` } })));
    socket.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString()) as { type: string };
      if (message.type === 'connection_ack') socket.send(JSON.stringify({ type: 'subscribe', id: '1', payload: { query: SUBSCRIPTIONS.petEvents.query } }));
      else if (message.type === 'error') done('petCreated');
    });
    socket.on('error', () => done('petCreated'));
    socket.on('close', () => done('petCreated'));
  });
}

const SUBSCRIPTIONS = {
  petEvents: { query: 'subscription { petEvents { cursor pet { id } } }', field: 'petEvents' },
  petCreated: { query: 'subscription { petCreated { id } }', field: 'petCreated' },
} as const;

/** Creates one pet outside the measured run; @returns its id. */
async function createOne(system: RunningSystem, apiKey: string): Promise<number> {
  const response = await fetch(`${system.url}/v1/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Warm-up', categoryId: 1, status: 'available' }),
  });
  const body = (await response.json()) as { id: number | string };
  if (response.status !== 201) throw new Error(`warm-up create answered ${response.status} ${JSON.stringify(body)}`);
  return Number(body.id);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The webhook CLI of a build (docs/webhooks.md "Endpoints"), relative to its folder. */
export const WEBHOOK_CLI = path.join('dist', 'src', 'cli', 'webhook.cli.js');

/**
 * What the service and its webhook CLI need to deliver to a receiver at http://127.0.0.1: http and private targets allowed,
 * which the configuration refuses with NODE_ENV=production, so `test` (what differs from production, all of it from
 * NODE_ENV: bench/README.md "The service's set-up").
 */
export const WEBHOOK_ENV = { NODE_ENV: 'test', WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_DELIVERIES: 'true' };

/** Runs the build's webhook CLI in `directory` on `databaseUrl` (its own database connection); @returns its stdout. */
export async function webhookCli(directory: string, databaseUrl: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(process.execPath, [WEBHOOK_CLI, ...args], {
      cwd: directory,
      env: { ...process.env, ...WEBHOOK_ENV, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' },
    });
    return stdout;
  } catch (error) {
    throw new Error(`webhook ${args.join(' ')} failed: ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`, { cause: error });
  }
}

/** Registers `url` as a webhook endpoint of every pet with the build's CLI (`webhook add`); @returns the endpoint's id. */
export async function addWebhookEndpoint(directory: string, databaseUrl: string, url: string): Promise<number> {
  await webhookCli(directory, databaseUrl, ['add', url, '--description', 'bench feed follower']);
  const listed = JSON.parse(await webhookCli(directory, databaseUrl, ['list', '--json'])) as Array<{ id: number; url: string }>;
  const endpoint = listed.find((e) => e.url === url);
  if (!endpoint) throw new Error(`webhook add ${url}: not in webhook list (${JSON.stringify(listed)})`);
  return endpoint.id;
}

/** Polls every client process until each of its clients that is still open has pet `id`, or `timeoutMs` passes. @returns ms waited. */
async function waitForEvent(children: Array<{ child: ChildProcess; open: number }>, id: number, timeoutMs: number): Promise<number> {
  const began = Date.now();
  for (;;) {
    let all = true;
    for (const { child, open } of children) {
      const { clients } = await ask(child, { type: 'received', id }, 'received');
      if (clients < open) all = false;
    }
    if (all || Date.now() - began > timeoutMs) return Date.now() - began;
    await sleep(100);
  }
}

export interface FeedPhaseOptions {
  /** Starts the service (or the baseline) with `env` added, on `databaseUrl`. */
  start: (system: 'service' | 'baseline', env: Record<string, string>, databaseUrl: string) => Promise<RunningSystem>;
  /** The folder the system's build runs from: its webhook CLI (dist/src/cli/webhook.cli.js) registers the webhook endpoint. */
  directory: (system: 'service' | 'baseline') => string;
  databaseUrl: string;
  context: ScenarioContext;
  settings: FeedSettings;
  /** Whether a `--baseline` is checked out: its sequencer cost (none) is measured beside the service's. */
  baseline: boolean;
  redisUrl: string;
  log: (message: string) => void;
}

/**
 * The feed phase (bench/README.md "Feed"): delivery latency and exactness to SSE and WebSocket followers and a webhook
 * endpoint of one instance, with and without Redis; then the sequencer's statements and time per create, through a counting
 * proxy.
 */
export async function feedPhase(options: FeedPhaseOptions): Promise<FeedResults> {
  const { settings } = options;
  const perKey = FOLLOWER_LIMITS.maxStreamsPerKey;
  const keys = await createApiKeys(options.databaseUrl, Math.ceil(settings.sseClients / perKey) + Math.ceil(settings.wsClients / perKey));
  const sseKeys = keys.slice(0, Math.ceil(settings.sseClients / perKey));
  const wsKeys = keys.slice(sseKeys.length);
  const variants: FeedVariant[] = [];
  for (const redis of settings.redis) variants.push(await deliveryRun(options, redis, sseKeys, wsKeys));
  const sequencer: SequencerCost[] = [];
  for (const system of options.baseline ? (['service', 'baseline'] as const) : (['service'] as const)) sequencer.push(await sequencerCost(options, system));
  return { variants, sequencer };
}

async function deliveryRun(options: FeedPhaseOptions, redis: boolean, sseKeys: string[], wsKeys: string[]): Promise<FeedVariant> {
  const { settings, log, context } = options;
  const channel = `petstore-bench-${process.pid}-${Date.now()}`;
  const directory = options.directory('service');
  const webhookMissing = existsSync(path.join(directory, WEBHOOK_CLI)) ? undefined : `the build has no webhook CLI (${WEBHOOK_CLI})`;
  const env: Record<string, string> = {
    ...(redis && { REDIS_URL: options.redisUrl, PET_EVENTS_CHANNEL: channel, RATE_LIMIT_NAMESPACE: channel }),
    ...(!webhookMissing && WEBHOOK_ENV),
  };
  log(
    `Feed: ${settings.sseClients} SSE + ${settings.wsClients} WebSocket followers${webhookMissing ? '' : ' + 1 webhook endpoint'}, creates at ${settings.rate}/s for ${settings.seconds} s, ${redis ? 'with' : 'without'} Redis`,
  );
  if (webhookMissing) log(`  webhook not measured: ${webhookMissing}`);
  const service = await options.start('service', env, options.databaseUrl);
  const children: Array<{ child: ChildProcess; kind: FollowerKind; open: number }> = [];
  let webhookEndpoint: number | undefined;
  try {
    const stamped = await waitUntilStamped(options.databaseUrl);
    if (stamped.timedOut) throw new Error(`the service left pets unstamped for ${stamped.ms} ms`);
    const sseMissing = settings.sseClients > 0 ? await probeSse(service, context.apiKey) : 'no SSE clients asked for';
    const subscription = await probeSubscription(service, context.apiKey);
    if (sseMissing) log(`  SSE not measured: ${sseMissing}`);
    log(`  WebSocket followers subscribe to ${subscription}`);
    const setups: FeedClientsSetup[] = [];
    if (!sseMissing) setups.push({ kind: 'sse', url: service.url, keys: sseKeys, count: settings.sseClients, openAtOnce: 16 });
    if (settings.wsClients > 0) {
      // Under the service's cap on unauthenticated sockets of one address.
      const openAtOnce = Math.max(1, Math.floor(SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress / 2));
      setups.push({ kind: 'ws', url: service.url, keys: wsKeys, count: settings.wsClients, subscription: SUBSCRIPTIONS[subscription], openAtOnce });
    }
    if (!webhookMissing) setups.push({ kind: 'webhook', url: service.url, keys: [], count: 1, openAtOnce: 1 });
    for (const setup of setups) {
      const child = fork(path.join(__dirname, 'feed-clients.js'), [JSON.stringify(setup)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] });
      children.push({ child, kind: setup.kind, open: 0 });
    }
    const connectBegan = Date.now();
    await Promise.all(
      children.map(async (entry) => {
        const connected = await ask(entry.child, { type: 'connect' }, 'connected');
        entry.open = connected.open;
        log(`  ${entry.kind}: ${connected.open} open, ${connected.failed} failed${connected.failed ? ` (${connected.failures.join('; ')})` : ''}`);
        // The endpoint's deliveries start after the feed's head now: before the warm-up creates.
        for (const url of connected.urls) {
          webhookEndpoint = await addWebhookEndpoint(directory, options.databaseUrl, url);
          log(`  webhook: endpoint ${webhookEndpoint} registered (webhook add ${url})`);
        }
      }),
    );
    const connectSeconds = (Date.now() - connectBegan) / 1000;
    // Every follower live: a create each of them must see before the measured ones.
    const warmUpIds: number[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      warmUpIds.push(await createOne(service, context.apiKey));
      const waited = await waitForEvent(children, warmUpIds.at(-1)!, 20_000);
      log(`  warm-up event ${attempt + 1} reached the followers in ${waited} ms`);
    }
    for (const { child } of children) await ask(child, { type: 'mark' }, 'marked');
    const answers: Array<[number, number]> = [];
    const create = SCENARIOS.find((s) => s.surface === 'rest' && s.name === 'create')!;
    const creates = await measureAtRate(service, create, context, {
      duration: settings.seconds,
      connections: 32,
      rate: settings.rate,
      onAnswer: (status, body, answeredAt) => {
        if (status === 201) answers.push([Number((JSON.parse(body) as { id: number | string }).id), answeredAt]);
      },
    });
    const serviceExited = !Number.isFinite(creates.cpuMs);
    if (serviceExited) {
      log(`  the service exited during the creates; its last output:\n${service.output().stderr.slice(-3000)}\n${service.output().stdout.slice(-3000)}`);
    }
    const lastAnswer = Math.max(...answers.map(([, at]) => at));
    if (!serviceExited) await waitUntilStamped(options.databaseUrl, 30_000);
    const { seqs } = await feedPositions(
      options.databaseUrl,
      answers.map(([id]) => id),
    );
    const last = seqs.reduce((best, entry) => (entry[1] > best[1] ? entry : best), [0, 0]);
    if (!serviceExited) await waitForEvent(children, last[0], 30_000);
    const drainMs = performance.timeOrigin + performance.now() - lastAnswer;
    // Late duplicates, if any, arrive too.
    await sleep(500);
    const deliveries: FeedDelivery[] = [];
    for (const { child } of children) deliveries.push((await ask(child, { type: 'results', answers, seqs, warmUpIds }, 'results')).delivery);
    log(
      `  creates: ${answers.length} answered 201 (${Math.round(creates.rps)}/s, p99 ${creates.p99} ms, server CPU ${creates.cpuMsPerRequest.toFixed(3)} ms/create); every follower had the last event ${Math.round(drainMs)} ms after its answer`,
    );
    const fanOut = fanOutOf(creates, deliveries);
    log(
      `  fan-out: ${fanOut.deliveries} deliveries (SSE + WS) in ${(creates.cpuWindowMs / 1000).toFixed(1)} s, ${Math.round(fanOut.perSecond)}/s on ${fanOut.cores.toFixed(2)} server cores: ${Math.round(fanOut.perCore)} events/s per core`,
    );
    for (const d of deliveries) {
      log(
        `  ${d.kind}: ${d.live}/${d.clients} followers, latency p50 ${d.latency.p50} ms p99 ${d.latency.p99} ms max ${d.latency.max} ms; received ${d.received}/${d.expected}, missed ${d.missed}, duplicates ${d.duplicates}, out of order ${d.outOfOrder}, foreign ${d.foreign}; client CPU ${d.clientCpuMs} ms${deliveryFailed(d) ? '  DELIVERY FAILED' : ''}`,
      );
    }
    return {
      redis,
      rate: settings.rate,
      seconds: settings.seconds,
      subscription,
      ...(sseMissing && { sseMissing }),
      ...(webhookMissing && { webhookMissing }),
      connectSeconds,
      drainMs,
      serviceExited,
      creates,
      deliveries,
      fanOut,
    };
  } finally {
    for (const { child } of children) child.kill();
    await service.stop();
    // Not left to the runs after this one, whose service would deliver to a receiver that is gone.
    if (webhookEndpoint !== undefined) {
      const id = webhookEndpoint;
      await webhookCli(directory, options.databaseUrl, ['remove', String(id)]).catch((error: Error) =>
        log(`  webhook: endpoint ${id} NOT REMOVED: ${error.message}`),
      );
    }
  }
}

async function sequencerCost(options: FeedPhaseOptions, system: 'service' | 'baseline'): Promise<SequencerCost> {
  const { settings, log, context } = options;
  const target = new URL(options.databaseUrl);
  const counter = new StatementCounter({ host: target.hostname, port: Number(target.port || 3306) }, classifyStatement);
  const port = await counter.listen();
  const proxied = new URL(options.databaseUrl);
  proxied.port = String(port);
  log(`Feed: the sequencer's statements, ${system}, creates at ${settings.rate}/s for ${settings.sequencerSeconds} s through a counting proxy`);
  try {
    const running = await options.start(system, {}, proxied.toString());
    try {
      if (system === 'service') await waitUntilStamped(options.databaseUrl);
      // Its start-up and the readiness probe are not counted, nor a second of its idle ticks.
      await sleep(1000);
      const headBefore = (await feedPositions(options.databaseUrl, [])).head;
      counter.reset();
      const create = SCENARIOS.find((s) => s.surface === 'rest' && s.name === 'create')!;
      const creates = await measureAtRate(running, create, context, {
        duration: settings.sequencerSeconds,
        connections: 32,
        rate: settings.rate,
        settleMs: 300,
      });
      if (system === 'service') await waitUntilStamped(options.databaseUrl, 10_000);
      const headAfter = (await feedPositions(options.databaseUrl, [])).head;
      const statements = [...counter.tallies].map(([kind, tally]) => ({ kind, ...tally })).sort((a, b) => b.count - a.count);
      const stamping = counter.transactions.filter((t) => t.kinds.some((kind) => STAMP_KINDS.includes(kind)));
      const sequencer = { count: stamping.reduce((sum, t) => sum + t.statements, 0), ms: stamping.reduce((sum, t) => sum + t.ms, 0) };
      for (const { count, ms } of statements.filter((s) => SEQUENCER_KINDS.includes(s.kind))) {
        sequencer.count += count;
        sequencer.ms += ms;
      }
      const cost: SequencerCost = {
        system,
        rate: settings.rate,
        seconds: settings.sequencerSeconds,
        creates: creates.statuses['201'] ?? 0,
        stamped: system === 'service' ? headAfter - headBefore : 0,
        statements,
        sequencer,
        stampTransactions: { count: stamping.length, ms: stamping.reduce((sum, t) => sum + t.ms, 0) },
        cpuMsPerCreate: creates.cpuMsPerRequest,
      };
      const perCreate = (value: number) => (cost.creates > 0 ? value / cost.creates : NaN).toFixed(3);
      log(
        `  ${cost.creates} creates, ${cost.stamped} stamped; every statement ${perCreate(statements.reduce((sum, s) => sum + s.count, 0))}/create; sequencer ${perCreate(sequencer.count)} statements and ${perCreate(sequencer.ms)} ms/create in ${cost.stampTransactions.count} stamp transactions; server CPU ${creates.cpuMsPerRequest.toFixed(3)} ms/create`,
      );
      return cost;
    } finally {
      await running.stop();
    }
  } finally {
    await counter.close();
  }
}
