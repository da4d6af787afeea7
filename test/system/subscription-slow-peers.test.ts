import { readFileSync } from 'node:fs';
import { type NetConnectOpts, type Socket, connect as connectTcp } from 'node:net';
import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { SUBSCRIPTION_CLOSE } from '../../src/graphql/subscription-close.codes';
import { apiKeyFor, built, freePort, startNode, waitForHttp } from '../helpers/processes';
import { type TestApp, startTestApp } from '../helpers/test-app';
import { createProcessDatabase } from '../helpers/test-database';
import { FOLLOWER_LIMITS, SUBSCRIPTION_LIMITS } from '../../src/limits';

/**
 * Subscribers that stop reading (docs/subscriptions.md "Limits": the keep-alive and the bytes that may
 * wait for a peer), against the real server on a real database. The first test runs the built
 * server in a process of its own, its heap capped at 128 MB as a small container's would be.
 */

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

describe('subscribers that stop reading', () => {
  const SLOW_SOCKETS = FOLLOWER_LIMITS.maxStreamsPerKey - 1; // the last place is the reading subscriber's
  const CREATES = 600; // ~500 killed the heap-capped instance before the bound
  const NAME = 'N'.repeat(100);
  // The largest event a subscription may ask for: every alias allowed, each a 100-character name (about 1.7 KiB).
  const SELECTION = Array.from({ length: 15 }, (_, i) => `a${i}: name`).join(' ');

  test(
    `when ${SLOW_SOCKETS} sockets × ${SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection} subscriptions stop reading and send unsolicited pongs while ${CREATES} pets are created, ` +
      'then each is closed with 1008 once 1 MiB waits for it, a reading subscriber gets every event, and the instance lives with a bounded RSS',
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
        readerDone.catch(() => undefined); // awaited below, once the creates are done
        const subscriptions = SLOW_SOCKETS * SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection + 1;
        while ((await gauge(metricsUrl, 'petstore_subscriptions_active')) < subscriptions) await new Promise((resolve) => setTimeout(resolve, 20));
        // From now on they read nothing, and keep sending the pongs no ping asked for.
        for (const { socket, tcp } of slow) {
          tcp.pause();
          pongers.push(setInterval(() => socket.pong(Buffer.from('still here')), 4000));
        }
        const rssBefore = rssMb(server.child.pid!);
        let rssPeak = rssBefore;
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
            rssPeak = Math.max(rssPeak, rssMb(server.child.pid!));
          }
        };
        let created = false;
        const creates = Promise.all(Array.from({ length: 4 }, () => creator(CREATES / 4))).finally(() => (created = true));
        // Reading again once the server has closed them all, within the 30 s ws gives a closed peer to answer,
        // each finds its close after what was waiting for it.
        const slowCloses = () => server.output.stdout.split('closing a stream whose client stopped reading').length - 1;
        while (slowCloses() < SLOW_SOCKETS && !created) await new Promise((resolve) => setTimeout(resolve, 20));
        for (const { tcp } of slow) tcp.resume();
        await creates;
        expect(slowCloses()).toBe(SLOW_SOCKETS);
        expect(exitCode).toBeUndefined();
        await readerDone;
        const closes = await Promise.all(slow.map(({ closed }) => closed));
        expect(closes).toEqual(Array(SLOW_SOCKETS).fill(SUBSCRIPTION_CLOSE.slowConsumer));
        expect(received).toHaveLength(CREATES);
        expect((await fetch(`${base}/healthz`)).status).toBe(200);
        // 19 MiB at most wait for the slow sockets; the creates alone add about 25 MB (measured without subscribers).
        // Measured: +48 to +55 MB; before the bound, the instance died (heap out of memory) after about 500 creates.
        const grewMb = rssPeak - rssBefore;
        console.log(`RSS ${rssBefore.toFixed(0)} MB → peak ${rssPeak.toFixed(0)} MB (+${grewMb.toFixed(0)} MB)`);
        expect(grewMb).toBeLessThan(80);
      } finally {
        for (const ponger of pongers) clearInterval(ponger);
        await reader?.dispose();
        server.child.kill('SIGKILL');
        await server.exited;
        await drop();
      }
    },
    60_000,
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
