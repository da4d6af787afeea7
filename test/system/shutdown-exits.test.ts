import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { openEventStream } from '../helpers/event-stream-client';
import { type PrivateServer, startPrivateMariadb, startPrivateRedis } from '../helpers/private-servers';
import { apiKeyFor, built, freePort, startNode, waitForHttp } from '../helpers/processes';
import { createProcessDatabase } from '../helpers/test-database';

/**
 * Shutdown always exits (docs/operations.md "Signals"): within SHUTDOWN_GRACE_SECONDS + 5 s of SIGTERM, whatever is away
 * or still open: the primary database stopped or stalled under it, Redis stopped under it, streams of the feed open. The built
 * server, in a process of its own, each time.
 */

const GRACE_SECONDS = 2;
/** The bound the operations guide promises. */
const EXIT_WITHIN_MS = (GRACE_SECONDS + 5) * 1000;

/** Starts the built server with `env`, in `cwd`; resolves once it answers /healthz. */
async function startServer(cwd: string, env: Record<string, string>) {
  const port = await freePort();
  const server = startNode(built('src/main.js'), {
    cwd,
    env: { PORT: String(port), METRICS_PORT: String(await freePort()), SHUTDOWN_DRAIN_SECONDS: '0', SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS), ...env },
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${base}/healthz`, 60_000);
  } catch (error) {
    server.child.kill('SIGKILL');
    throw new Error(`server did not start: ${String(error)}\n${server.output.stderr}`, { cause: error });
  }
  return { server, base };
}

/** SIGTERM, then how long until the process exited and with what code (null: killed after the bound and a margin). */
async function terminate(server: Awaited<ReturnType<typeof startServer>>['server']): Promise<{ code: number | null; exitedAfterMs: number }> {
  const sentAt = Date.now();
  server.child.kill('SIGTERM');
  const killer = setTimeout(() => server.child.kill('SIGKILL'), EXIT_WITHIN_MS + 10_000);
  const code = await server.exited;
  clearTimeout(killer);
  return { code, exitedAfterMs: Date.now() - sentAt };
}

describe('shutdown exits within SHUTDOWN_GRACE_SECONDS + 5 s', () => {
  const privates: PrivateServer[] = [];
  afterEach(async () => {
    for (const server of privates.splice(0)) await server.stop();
  });

  test('when the primary database was stopped under the running server, then SIGTERM still ends the process in time', async () => {
    const mariadb = await startPrivateMariadb();
    privates.push(mariadb);
    const { server, base } = await startServer(process.cwd(), { NODE_ENV: 'production', DATABASE_URL: mariadb.url });
    await mariadb.stop();
    // Until the instance has seen it: its periodic check and a request's failure.
    await fetch(`${base}/v1/pets`).catch(() => undefined);
    for (let i = 0; i < 50 && (await fetch(`${base}/readyz`)).status === 200; i++) await sleep(100);
    const { code, exitedAfterMs } = await terminate(server);
    console.log(`database stopped: exited ${code} after ${exitedAfterMs} ms`);
    expect(code).not.toBeNull();
    expect(exitedAfterMs).toBeLessThan(EXIT_WITHIN_MS);
  }, 90_000);

  test('when the primary database stalls (SIGSTOP) under a request waiting on it, then the request is answered 503 and SIGTERM still ends the process in time, cleanly', async () => {
    const mariadb = await startPrivateMariadb();
    privates.push(mariadb);
    const { server, base } = await startServer(process.cwd(), { NODE_ENV: 'production', DATABASE_URL: mariadb.url });
    const apiKey = await apiKeyFor(server, { cwd: process.cwd(), database: { type: 'mysql', url: mariadb.url } }, 'shutdown-stall');
    mariadb.pause();
    // Its key is looked up in the stalled database: it waits for the call's deadline (2 s), which ends within the grace period.
    const waiting = fetch(`${base}/v1/pets`, { headers: { authorization: `Bearer ${apiKey}` } });
    await sleep(1000);
    const { code, exitedAfterMs } = await terminate(server);
    const answered = await waiting;
    console.log(`database stalled: the waiting request answered ${answered.status}; exited ${code} after ${exitedAfterMs} ms`);
    expect([answered.status, answered.headers.get('retry-after')]).toEqual([503, '1']);
    expect(code).toBe(0);
    expect(exitedAfterMs).toBeLessThan(EXIT_WITHIN_MS);
  }, 90_000);

  test('when Redis was stopped under the running server, then SIGTERM still ends the process in time, cleanly', async () => {
    const redis = await startPrivateRedis();
    privates.push(redis);
    const { cwd, env, drop } = await createProcessDatabase('shutdown-redis-');
    try {
      const { server, base } = await startServer(cwd, { ...env, REDIS_URL: redis.url, REDIS_NAMESPACE: 'shutdown-exits:' });
      await redis.stop();
      for (let i = 0; i < 50 && !(await (await fetch(`${base}/readyz`)).text()).includes('degraded'); i++) await sleep(100);
      const { code, exitedAfterMs } = await terminate(server);
      console.log(`Redis stopped: exited ${code} after ${exitedAfterMs} ms`);
      expect(code).toBe(0);
      expect(exitedAfterMs).toBeLessThan(EXIT_WITHIN_MS);
    } finally {
      await drop();
    }
  }, 90_000);

  test('when SSE streams and WebSockets are open, one of them not reading, then SIGTERM ends them and the process in time, cleanly', async () => {
    const { cwd, database, env, drop } = await createProcessDatabase('shutdown-streams-');
    try {
      const { server, base } = await startServer(cwd, env);
      const apiKey = await apiKeyFor(server, { cwd, database }, 'shutdown-streams');
      const streams = await Promise.all([openEventStream({ url: base, apiKey }), openEventStream({ url: base, apiKey })]);
      const sockets = await Promise.all(
        [0, 1].map(async () => {
          const socket = new WebSocket(`${base.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
          socket.on('error', () => undefined);
          await new Promise((resolve) => socket.once('open', resolve));
          socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${apiKey}` } }));
          await new Promise((resolve) => socket.once('message', resolve));
          socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { petEvents { cursor } }' } }));
          return socket;
        }),
      );
      // One stream whose client reads nothing more: its end is never taken.
      streams[1].response.pause();
      const closedCodes = sockets.map((socket) => new Promise<number>((resolve) => socket.once('close', (closeCode: number) => resolve(closeCode))));
      const { code, exitedAfterMs } = await terminate(server);
      console.log(`streams open: exited ${code} after ${exitedAfterMs} ms`);
      expect(code).toBe(0);
      expect(exitedAfterMs).toBeLessThan(EXIT_WITHIN_MS);
      await streams[0].ended;
      expect(await Promise.all(closedCodes)).toEqual([1001, 1001]);
    } finally {
      await drop();
    }
  }, 90_000);
});
