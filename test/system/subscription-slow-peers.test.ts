import { readFileSync } from 'node:fs';
import { type NetConnectOpts, type Socket, connect as connectTcp } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { openDatabase } from '../../src/database/open-database';
import { SUBSCRIPTION_CLOSE } from '../../src/graphql/subscription-close.codes';
import { encodeEventCursor } from '../../src/pets/pet-cursor';
import { apiKeyFor, built, freePort, startNode, waitForHttp } from '../helpers/processes';
import { type TestApp, startTestApp } from '../helpers/test-app';
import { createProcessDatabase, testOnMysql } from '../helpers/test-database';
import { FOLLOWER_LIMITS, SUBSCRIPTION_LIMITS } from '../../src/limits';

/**
 * Clients of the change feed that stop reading (docs/subscriptions.md "Limits", docs/events.md "Server-sent events":
 * the keep-alive and the pacing rule of every stream, FOLLOWER_LIMITS), against the real server on a real database.
 * The pacing rule: once pauseAtBytes (64 KiB) wait unsent, a stream takes no more events until its client reads; a
 * client that reads nothing for stalledReaderMs (5 s) while events wait is cut (a WebSocket with 1008, an SSE
 * connection destroyed); never more than maxBufferedBytes (1 MiB) waits. The tests of that rule run the built server
 * in a process of its own, its heap capped at 128 MB as a small container's would be.
 */

/** The line the server logs, on either transport, when it cuts a client that stopped reading. */
const STOPPED_READING = 'closing a stream whose client stopped reading';

/** The server's {@link STOPPED_READING} lines so far, whole ones only (pino JSON: `time` in ms since the epoch, as Date.now()). */
function slowCuts(stdout: string): { time: number; transport: string; bufferedBytes: number }[] {
  return stdout
    .slice(0, stdout.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((line) => line.includes(STOPPED_READING))
    .map((line) => JSON.parse(line));
}

/** Resolves once `check` holds, polling every 20 ms; rejects with `what()` after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms: number, what: () => string): Promise<void> {
  const giveUpAt = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error(what());
    await sleep(20);
  }
}

/** The resident memory of process `pid`, in MB (Linux: VmRSS of /proc/<pid>/status). */
function rssMb(pid: number): number {
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kib === undefined) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kib) / 1024;
}

/** How a socket ended, as the client saw it. */
interface Closed {
  code: number;
  reason: string;
}

/** Resolves with the close of `socket` (code and reason). */
const closeOf = (socket: WebSocket) =>
  new Promise<Closed>((resolve) => socket.once('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })));

/**
 * A graphql-transport-ws socket authenticated with `apiKey`, and its TCP socket: pausing that
 * one stops reading while the WebSocket can still send (pongs).
 */
async function openAuthenticated(url: string, apiKey: string, options: WebSocket.ClientOptions = {}) {
  let tcp!: Socket;
  const createConnection = ((opts: NetConnectOpts) => (tcp = connectTcp(opts))) as typeof connectTcp;
  const socket = new WebSocket(url, 'graphql-transport-ws', { ...options, createConnection });
  socket.on('error', () => undefined); // the close tells the test what happened
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${apiKey}` } }));
  const ack = await new Promise<string>((resolve) => socket.once('message', (data: Buffer) => resolve(data.toString())));
  expect(JSON.parse(ack)).toEqual({ type: 'connection_ack' });
  return { socket, tcp };
}

/** The value of an unlabelled gauge on a Prometheus text page. */
async function gauge(metricsUrl: string, name: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
}

/** The value of a gauge's series with `labels` (e.g. `transport="sse"`) on a Prometheus text page. */
async function labelled(metricsUrl: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(metricsUrl)).text();
  return Number(
    text
      .split('\n')
      .find((line) => line.startsWith(`${name}{${labels}} `))
      ?.split(' ')[1] ?? NaN,
  );
}

describe('subscribers that stop reading', () => {
  const SLOW_SOCKETS = FOLLOWER_LIMITS.maxStreamsPerKey - 1; // the last place is the reading subscriber's
  const CREATES = 600; // ~500 killed the heap-capped instance before the bytes waiting for a peer were bounded
  const NAME = 'N'.repeat(100);
  // The largest event a subscription may ask for: every alias allowed, each a 100-character name (about 1.7 KiB).
  const SELECTION = Array.from({ length: 15 }, (_, i) => `a${i}: name`).join(' ');
  /** After the creates, how long the last slow socket may take to be cut: its kernel buffers filled, 64 KiB more, then stalledReaderMs. */
  const CUT_WAIT_MS = 30_000;

  test(
    `when ${SLOW_SOCKETS} sockets × ${SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection} subscriptions stop reading and send unsolicited pongs while ${CREATES} pets are created, ` +
      `then each is closed with 1008 once it has read nothing for ${FOLLOWER_LIMITS.stalledReaderMs} ms while events wait (never sooner; paced, so about 64 KiB waits for it, never 1 MiB), ` +
      'a reading subscriber gets every event, and the instance lives with a bounded RSS',
    async () => {
      const { cwd, database, env, drop } = await createProcessDatabase('slow-peers-');
      const port = await freePort();
      const metricsPort = await freePort();
      const server = startNode(built('src/main.js'), {
        cwd,
        env: {
          NODE_ENV: database.type === 'mysql' ? 'production' : 'development',
          NODE_OPTIONS: '--max-old-space-size=128',
          PORT: String(port),
          METRICS_PORT: String(metricsPort),
          RATE_LIMIT_MAX: '1000000',
          ...env,
        },
      });
      const base = `http://127.0.0.1:${port}`;
      const url = `ws://127.0.0.1:${port}/graphql`;
      const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
      let exitCode: number | null | undefined;
      void server.exited.then((code) => (exitCode = code));
      const pongers: NodeJS.Timeout[] = [];
      let sampler: NodeJS.Timeout | undefined;
      let reader: Client | undefined;
      try {
        await waitForHttp(`${base}/healthz`);
        const apiKey = await apiKeyFor(server, { cwd, database }, 'slow-peers');
        const slow = [];
        for (let i = 0; i < SLOW_SOCKETS; i++) {
          const peer = await openAuthenticated(url, apiKey);
          for (let id = 0; id < SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection; id++) {
            peer.socket.send(JSON.stringify({ id: String(id), type: 'subscribe', payload: { query: `subscription { petCreated { ${SELECTION} } }` } }));
          }
          slow.push({ ...peer, closed: closeOf(peer.socket) });
        }
        const received: unknown[] = [];
        reader = createClient({ url, webSocketImpl: WebSocket, connectionParams: { Authorization: `Bearer ${apiKey}` }, retryAttempts: 0 });
        const readerDone = new Promise<void>((resolve, reject) =>
          reader!.subscribe(
            { query: `subscription { petCreated { ${SELECTION} } }` },
            {
              next: (result) => {
                if (received.push(result.data) === CREATES) resolve();
              },
              error: (error: unknown) => reject(new Error(`the reading subscription ended: ${(error as { code?: number }).code ?? String(error)}`)),
              complete: () => reject(new Error('the reading subscription completed')),
            },
          ),
        );
        readerDone.catch(() => undefined); // awaited below, once the slow sockets are cut
        const subscriptions = SLOW_SOCKETS * SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection + 1;
        while ((await gauge(metricsUrl, 'petstore_subscriptions_active')) < subscriptions) await sleep(20);
        // From now on they read nothing, and keep sending the pongs no ping asked for. No event was sent before: no
        // stall can have begun earlier, so none may be cut before pausedAt + stalledReaderMs.
        for (const { socket, tcp } of slow) {
          tcp.pause();
          pongers.push(setInterval(() => socket.pong(Buffer.from('still here')), 4000));
        }
        const pausedAt = Date.now();
        const rssBefore = rssMb(server.child.pid!);
        let rssPeak = rssBefore;
        sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(server.child.pid!))), 50);
        const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
        const creator = async (count: number) => {
          for (let i = 0; i < count; i++) {
            const response = await fetch(`${base}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: NAME, categoryId: 1 }) }).catch(
              (error: unknown) => {
                const fatal = /^FATAL ERROR.*$/m.exec(server.output.stderr)?.[0];
                throw new Error(
                  `create failed (server exit: ${exitCode ?? server.child.signalCode}): ${String(error)}; ${fatal ?? server.output.stderr.slice(-300)}`,
                );
              },
            );
            expect(response.status).toBe(201);
          }
        };
        await Promise.all(Array.from({ length: 4 }, () => creator(CREATES / 4)));
        const createdAt = Date.now();
        await until(
          () => slowCuts(server.output.stdout).length >= SLOW_SOCKETS,
          CUT_WAIT_MS,
          () => `${slowCuts(server.output.stdout).length} of ${SLOW_SOCKETS} slow sockets cut ${CUT_WAIT_MS} ms after the creates`,
        );
        clearInterval(sampler);
        const cuts = slowCuts(server.output.stdout);
        expect(cuts).toHaveLength(SLOW_SOCKETS);
        for (const cut of cuts) {
          expect(cut.transport).toBe('websocket');
          expect(cut.bufferedBytes).toBeLessThanOrEqual(FOLLOWER_LIMITS.maxBufferedBytes);
          // Paced, not just bounded: past pauseAtBytes each subscription sends at most the frame it had (under 2 KiB), then waits.
          expect(cut.bufferedBytes).toBeLessThanOrEqual(FOLLOWER_LIMITS.pauseAtBytes + SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection * 2048);
        }
        const cutAfter = cuts.map((cut) => cut.time - pausedAt).sort((x, y) => x - y);
        const waited = cuts.map((cut) => cut.bufferedBytes).sort((x, y) => x - y);
        console.log(
          `${SLOW_SOCKETS} slow sockets cut ${cutAfter[0]}–${cutAfter.at(-1)} ms after they stopped reading (creates done after ${createdAt - pausedAt} ms), ` +
            `${(waited[0] / 1024).toFixed(0)}–${(waited.at(-1)! / 1024).toFixed(0)} KiB waiting at the cut`,
        );
        expect(cutAfter[0]).toBeGreaterThanOrEqual(FOLLOWER_LIMITS.stalledReaderMs);
        // Reading again within the 30 s ws gives a closed peer to answer: each finds its close after what waited for it.
        for (const { tcp } of slow) tcp.resume();
        const closes = await Promise.all(slow.map(({ closed }) => closed));
        expect(closes).toEqual(Array(SLOW_SOCKETS).fill(SUBSCRIPTION_CLOSE.slowConsumer));
        expect(exitCode).toBeUndefined();
        await readerDone;
        expect(received).toHaveLength(CREATES);
        expect((await fetch(`${base}/healthz`)).status).toBe(200);
        // At most 64 KiB and a frame per subscription (under 2 KiB) wait for each slow socket, about 1.6 MiB for them all;
        // the creates alone add about 25 MB (measured without subscribers). Measured: +27 to +32 MB (sampled every 50 ms
        // until the last cut); when up to 1 MiB waited per socket, +48 to +55 MB.
        const grewMb = rssPeak - rssBefore;
        console.log(`RSS ${rssBefore.toFixed(0)} MB → peak ${rssPeak.toFixed(0)} MB (+${grewMb.toFixed(0)} MB)`);
        expect(grewMb).toBeLessThan(45);
      } finally {
        clearInterval(sampler);
        for (const ponger of pongers) clearInterval(ponger);
        await reader?.dispose();
        server.child.kill('SIGKILL');
        await server.exited;
        await drop();
      }
    },
    90_000,
  );

  testOnMysql(
    `when an SSE client stops reading during a long replay, then its stream is cut once it has read nothing for ${FOLLOWER_LIMITS.stalledReaderMs} ms while events wait ` +
      '(not sooner; paced, so about 64 KiB waits for it, never 1 MiB), and its place is given back',
    async () => {
      // Enough to fill the kernel's buffers on both ends and 64 KiB more: about 550 bytes an event.
      const COUNT = 12_000;
      const { cwd, database, env, drop } = await createProcessDatabase('slow-sse-');
      const port = await freePort();
      const metricsPort = await freePort();
      const server = startNode(built('src/main.js'), {
        cwd,
        env: {
          NODE_ENV: 'production',
          NODE_OPTIONS: '--max-old-space-size=128',
          PORT: String(port),
          METRICS_PORT: String(metricsPort),
          RATE_LIMIT_MAX: '1000000',
          ...env,
        },
      });
      const base = `http://127.0.0.1:${port}`;
      let socket: Socket | undefined;
      try {
        await waitForHttp(`${base}/healthz`);
        const apiKey = await apiKeyFor(server, { cwd, database }, 'slow-sse');
        const opened = await openDatabase(database);
        try {
          for (let done = 0; done < COUNT; done += 500) {
            await opened.writer.query(
              `INSERT INTO pet (name, category_id, status) VALUES ${Array(500).fill("(?, 1, 'available')").join(', ')}`,
              Array(500).fill('🐕'.repeat(100)),
            );
          }
        } finally {
          await opened.close();
        }
        // The server's sequencer has stamped them all.
        const last = `${base}/v1/events?limit=1&after=${encodeEventCursor(COUNT - 1)}`;
        const authorization = `Bearer ${apiKey}`;
        await until(
          async () => ((await (await fetch(last, { headers: { authorization } })).json()) as unknown[]).length === 1,
          60_000,
          () => 'the inserted pets never all reached the feed',
        );
        socket = connectTcp(port, '127.0.0.1');
        await new Promise((resolve) => socket!.once('connect', resolve));
        socket.pause();
        let read = 0;
        const ended = new Promise<number>((resolve) => socket!.once('close', () => resolve(Date.now())));
        const sentAt = Date.now();
        socket.write(
          `GET /v1/events?after=${encodeEventCursor(1)} HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nAuthorization: ${authorization}\r\n\r\n`,
        );
        await until(
          () => slowCuts(server.output.stdout).length > 0,
          30_000,
          () => `not cut 30 s after the request`,
        );
        const [cut] = slowCuts(server.output.stdout);
        console.log(`SSE client that stopped reading cut ${cut.time - sentAt} ms after its request, ${(cut.bufferedBytes / 1024).toFixed(0)} KiB waiting`);
        expect(cut.transport).toBe('sse');
        expect(cut.bufferedBytes).toBeLessThanOrEqual(FOLLOWER_LIMITS.maxBufferedBytes);
        // Paced, not just bounded: past pauseAtBytes the stream sends at most the event it had (about 550 bytes), then waits.
        expect(cut.bufferedBytes).toBeLessThanOrEqual(FOLLOWER_LIMITS.pauseAtBytes + 1024);
        expect(cut.time - sentAt).toBeGreaterThanOrEqual(FOLLOWER_LIMITS.stalledReaderMs);
        // The kernel's buffers fill in well under a second on loopback; the rest is slack for a busy machine.
        expect(cut.time - sentAt).toBeLessThan(FOLLOWER_LIMITS.stalledReaderMs + 5000);
        // Reading again, the client gets what the kernel held, then the end: not the whole replay.
        socket.on('data', (chunk: Buffer) => (read += chunk.length));
        socket.resume();
        const endedAt = await Promise.race([ended, sleep(10_000, undefined, { ref: false })]);
        expect(endedAt).toBeDefined();
        expect(read).toBeLessThan(COUNT * 500);
        const streams = async () => labelled(`http://127.0.0.1:${metricsPort}/metrics`, 'petstore_feed_active_streams', 'transport="sse"');
        await until(
          async () => (await streams()) === 0,
          5000,
          () => 'the cut stream still holds its place',
        );
      } finally {
        socket?.destroy();
        server.child.kill('SIGKILL');
        await server.exited;
        await drop();
      }
    },
    120_000,
  );
});

describe('the keep-alive', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  test(
    'when a peer answers pings only with pongs that do not echo them, and sends unsolicited ones, then it is dropped within two ping periods',
    async () => {
      // autoPong off: pings are answered below, with the wrong payload.
      const { socket } = await openAuthenticated(`${t.url.replace(/^http/, 'ws')}/graphql`, t.apiKey, { autoPong: false });
      const authenticatedAt = Date.now();
      let pings = 0;
      socket.on('ping', () => {
        pings++;
        socket.pong(Buffer.from('not your payload'));
      });
      const unsolicited = setInterval(() => socket.pong(), 4000);
      let giveUp: NodeJS.Timeout | undefined;
      try {
        const stillOpen = new Promise<'open'>((resolve) => (giveUp = setTimeout(() => resolve('open'), 2 * SUBSCRIPTION_LIMITS.keepAliveMs + 3000)));
        const closed = await Promise.race([closeOf(socket), stillOpen]);
        expect(closed).toEqual({ code: 1006, reason: '' }); // terminated, no close frame
        expect(pings).toBeGreaterThanOrEqual(1);
        expect(Date.now() - authenticatedAt).toBeLessThan(2 * SUBSCRIPTION_LIMITS.keepAliveMs + 2000);
      } finally {
        clearTimeout(giveUp);
        clearInterval(unsolicited);
        socket.terminate();
      }
    },
    2 * SUBSCRIPTION_LIMITS.keepAliveMs + 10_000,
  );
});
