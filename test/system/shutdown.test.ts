import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Agent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DatabaseConfig } from '../../src/database/database-config';
import { openDatabase } from '../../src/database/open-database';
import { Pet } from '../../src/pets/pet.entity';
import { apiKeyFor, built, freePort, startNode, waitForHttp } from '../helpers/processes';
import { createProcessDatabase } from '../helpers/test-database';

/** The default grace period: longer than an idle connection's keep-alive timeout (5 s + Node's 1 s). */
const GRACE_SECONDS = 10;
/** Concurrent clients, each on its own kept-alive connection (fetch keeps connections by default). */
const CLIENTS = 16;

/** One request of the load: whether it started before SIGTERM and how it ended. */
interface Outcome {
  beforeSignal: boolean;
  status?: number;
  /** The socket error's code, e.g. ECONNREFUSED, ECONNRESET, UND_ERR_SOCKET ("other side closed"). */
  error?: string;
}

/** The built server on `database`, answering on a free port. */
async function startServer(cwd: string, database: DatabaseConfig, drainSeconds: number, graceSeconds = GRACE_SECONDS) {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const server = startNode(built('src/main.js'), {
    cwd,
    env: {
      NODE_ENV: database.type === 'mysql' ? 'production' : 'development',
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      SHUTDOWN_DRAIN_SECONDS: String(drainSeconds),
      SHUTDOWN_GRACE_SECONDS: String(graceSeconds),
      RATE_LIMIT_MAX: '1000000',
      ...(database.type === 'mysql' && { DATABASE_URL: database.url }),
    },
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${base}/healthz`);
  } catch (error) {
    server.child.kill('SIGKILL');
    throw new Error(`server did not start: ${String(error)}\n${server.output.stderr}`, { cause: error });
  }
  return { server, port, metricsPort, base };
}

/**
 * `clients` loops of fetch calls until the server has exited: a POST /v1/pets every fourth
 * request, else GET /v1/pets. After an error a client pauses 20 ms, like a client that retries.
 * Counts the TCP connections fetch opens to `port` (undici's diagnostics channel).
 */
function loadUntilExit({ base, port, apiKey, exited }: { base: string; port: number; apiKey: string; exited: Promise<unknown> }, clients = CLIENTS) {
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const outcomes: Outcome[] = [];
  const connections = { opened: 0, openedBeforeSignal: 0, lastOpenedAt: Date.now() };
  let signalled = false;
  let stop = false;
  void exited.then(() => (stop = true));
  const onConnected = (message: unknown) => {
    if (Number((message as { connectParams: { port: unknown } }).connectParams.port) !== port) return;
    connections.opened++;
    connections.lastOpenedAt = Date.now();
    if (!signalled) connections.openedBeforeSignal++;
  };
  subscribe('undici:client:connected', onConnected);

  const client = async (n: number) => {
    for (let i = 0; !stop; i++) {
      const outcome: Outcome = { beforeSignal: !signalled };
      outcomes.push(outcome);
      try {
        const response =
          i % 4 === 3
            ? await fetch(`${base}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `Load ${n}-${i}`, categoryId: 1 + (i % 20) }) })
            : await fetch(`${base}/v1/pets?limit=5`, { headers });
        await response.arrayBuffer();
        outcome.status = response.status;
      } catch (error) {
        outcome.error = String((error as { cause?: { code?: string } }).cause?.code ?? error);
        await sleep(20);
      }
    }
  };
  const done = Promise.all(Array.from({ length: clients }, (_, n) => client(n))).finally(() => unsubscribe('undici:client:connected', onConnected));
  /**
   * Resolves once the clients have opened no connection for `quietMs` (fetch's pool grows for a
   * while): they are all on kept-alive connections. A connection still being set up in the
   * kernel when the listener closes is reset by the OS; keeping new ones away then is the drain's job.
   */
  const settled = async (quietMs = 500) => {
    while (Date.now() - connections.lastOpenedAt < quietMs) await sleep(50);
  };
  return { outcomes, connections, done, settled, signal: () => (signalled = true) };
}

/** What one shutdown under load looked like, for the log and the assertions. */
function tally(outcomes: Outcome[], connections: { opened: number; openedBeforeSignal: number }) {
  const errors = outcomes.filter((o) => o.error !== undefined);
  const resets = errors.filter((o) => o.error !== 'ECONNREFUSED');
  const answered = outcomes.filter((o) => o.status !== undefined);
  const before = outcomes.filter((o) => o.beforeSignal);
  return {
    requests: outcomes.length,
    succeeded: answered.filter((o) => o.status! < 300).length,
    created: answered.filter((o) => o.status === 201).length,
    non2xx: answered.filter((o) => o.status! >= 300).map((o) => o.status),
    answeredAfterSignal: answered.filter((o) => !o.beforeSignal).length,
    refused: errors.length - resets.length,
    resets: resets.length,
    resetCodes: [...new Set(resets.map((o) => o.error))],
    requestsBeforeSignal: before.length,
    connectionsBeforeSignal: connections.openedBeforeSignal,
    connections: connections.opened,
  };
}

/** A POST whose body arrives in two halves: the second only when `finish()` is called. */
function slowCreate(base: string, apiKey: string) {
  const body = JSON.stringify({ name: 'Slowpoke', categoryId: 3 });
  const half = Math.floor(body.length / 2);
  let finish!: () => void;
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(`${base}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.write(body.slice(0, half));
    req.flushHeaders();
    finish = () => req.end(body.slice(half));
  });
  return { response, finish: () => finish() };
}

/** GET /v1/pets on `agent`: the status, the Connection header, and the socket it went on. */
function getPets(base: string, apiKey: string, agent: Agent) {
  return new Promise<{ status: number; connection?: string; reusedSocket: boolean; socket: Socket }>((resolve, reject) => {
    const req = httpRequest(`${base}/v1/pets?limit=1`, { agent, headers: { authorization: `Bearer ${apiKey}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, reusedSocket: req.reusedSocket, socket: req.socket! }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** How a kept-alive client socket ends: `end` (the server closed it in order) or its error code. */
function endOf(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    socket.once('end', () => resolve('end'));
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? String(error)));
  });
}

/** Resolves once a new connection to `port` is refused: the server no longer accepts. */
async function untilRefused(port: number): Promise<void> {
  for (;;) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(false)));
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
    });
    if (refused) return;
    await sleep(20);
  }
}

/** The number of pets in `database`, read after the server has stopped. */
async function countPets(database: DatabaseConfig): Promise<number> {
  const opened = await openDatabase(database);
  try {
    return await opened.writer.getRepository(Pet).count();
  } finally {
    await opened.close();
  }
}

/**
 * SIGTERM under load (docs/operations.md "Signals"): the built server on the test database,
 * clients looping on kept-alive connections. A client may see its connection refused once the
 * server stopped accepting, never reset, and every request the server read is answered 2xx.
 */
describe('graceful shutdown', () => {
  test('when SIGTERM arrives mid-load while a create is still uploading, then the upload completes, no request is reset or answered non-2xx, and the process exits 0 within the grace period', async () => {
    const drainSeconds = 1;
    const setup = await createProcessDatabase('shutdown-');
    const { server, port, base } = await startServer(setup.cwd, setup.database, drainSeconds);
    try {
      const apiKey = await apiKeyFor(server, setup, 'shutdown');
      const load = loadUntilExit({ base, port, apiKey, exited: server.exited });
      await sleep(1000);
      await load.settled();
      const upload = slowCreate(base, apiKey);
      await sleep(100);

      const signalledAt = Date.now();
      load.signal();
      server.child.kill('SIGTERM');
      // The server stops accepting after the drain; the upload is still arriving then.
      await sleep((drainSeconds + 0.5) * 1000);
      upload.finish();
      const uploaded = await upload.response;
      const code = await server.exited;
      const stoppedAfterMs = Date.now() - signalledAt;
      await load.done;
      const counts = tally(load.outcomes, load.connections);
      console.info(`Shutdown under load with an upload: ${JSON.stringify({ ...counts, stoppedAfterMs })}`);

      expect(code).toBe(0);
      expect(stoppedAfterMs).toBeLessThan((drainSeconds + GRACE_SECONDS) * 1000);
      expect(uploaded.status).toBe(201);
      expect(counts).toMatchObject({ resets: 0, non2xx: [] });
      expect(counts.succeeded).toBeGreaterThan(50);
      // The server went on serving through the drain, after the signal.
      expect(counts.answeredAfterSignal).toBeGreaterThan(0);
      // Nothing half-done: one pet per 201 answer, the upload's included.
      expect(await countPets(setup.database)).toBe(counts.created + 1);
    } finally {
      server.child.kill('SIGKILL');
      await setup.drop();
    }
  }, 60_000);

  test('when kept-alive connections are idle at SIGTERM, then a request sent on one after the server stopped accepting is answered with Connection: close, and the other is closed in order at its keep-alive timeout, not reset', async () => {
    const setup = await createProcessDatabase('shutdown-');
    const { server, port, base } = await startServer(setup.cwd, setup.database, 0);
    const agents = [new Agent({ keepAlive: true, maxSockets: 1 }), new Agent({ keepAlive: true, maxSockets: 1 })];
    try {
      const apiKey = await apiKeyFor(server, setup, 'shutdown');
      const [used, unused] = await Promise.all(agents.map((agent) => getPets(base, apiKey, agent)));
      const unusedEnd = endOf(unused.socket);

      const signalledAt = Date.now();
      server.child.kill('SIGTERM');
      await untilRefused(port);
      const late = await getPets(base, apiKey, agents[0]);
      expect({ status: late.status, connection: late.connection, reusedSocket: late.reusedSocket, sameSocket: late.socket === used.socket }).toEqual({
        status: 200,
        connection: 'close',
        reusedSocket: true,
        sameSocket: true,
      });
      await expect(getPets(base, apiKey, agents[0])).rejects.toMatchObject({ code: 'ECONNREFUSED' });

      expect(await unusedEnd).toBe('end');
      expect(await server.exited).toBe(0);
      console.info(`Idle keep-alive connection at SIGTERM: the server stopped after ${Date.now() - signalledAt} ms`);
    } finally {
      for (const agent of agents) agent.destroy();
      server.child.kill('SIGKILL');
      await setup.drop();
    }
  });

  test('when only an idle kept-alive connection is left at the end of the grace period, then it is closed in order and the process exits 0', async () => {
    const setup = await createProcessDatabase('shutdown-');
    const { server, base } = await startServer(setup.cwd, setup.database, 0, 1);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const idle = await getPets(base, await apiKeyFor(server, setup, 'shutdown'), agent);
      const idleEnd = endOf(idle.socket);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(0);
      expect(await idleEnd).toBe('end');
    } finally {
      agent.destroy();
      server.child.kill('SIGKILL');
      await setup.drop();
    }
  });

  test('when a request is still arriving at the end of the grace period, then it is cut and the process exits 1', async () => {
    const setup = await createProcessDatabase('shutdown-');
    const { server, base } = await startServer(setup.cwd, setup.database, 0, 1);
    try {
      const upload = slowCreate(base, await apiKeyFor(server, setup, 'shutdown'));
      const cut = upload.response.then(
        () => 'answered',
        (error: NodeJS.ErrnoException) => error.code,
      );
      await sleep(300);
      server.child.kill('SIGTERM');
      expect(await server.exited).toBe(1);
      expect(await cut).toBe('ECONNRESET');
    } finally {
      server.child.kill('SIGKILL');
      await setup.drop();
    }
  });

  test('when a scrape is still arriving on the metrics port at SIGTERM, then it is cut with the metrics listener and the process exits 0 within the grace period', async () => {
    const setup = await createProcessDatabase('shutdown-');
    const graceSeconds = 1;
    const { server, metricsPort } = await startServer(setup.cwd, setup.database, 0, graceSeconds);
    const scrape = connect(metricsPort, '127.0.0.1');
    try {
      await new Promise((resolve) => scrape.once('connect', resolve));
      // Its headers never end: Node would keep the connection open until its headersTimeout (60 s).
      scrape.write('GET /metrics HTTP/1.1\r\nHost: prometheus\r\n');
      const scrapeEnd = endOf(scrape);
      await sleep(200);
      const signalledAt = Date.now();
      server.child.kill('SIGTERM');
      // The grace period plus the spans' flush (at most 2 s) bound the whole stop (docs/operations.md "Signals").
      const bound = (graceSeconds + 2) * 1000;
      expect(await Promise.race([server.exited, sleep(bound).then(() => `still running ${bound} ms after SIGTERM`)])).toBe(0);
      expect(Date.now() - signalledAt).toBeLessThan(bound);
      expect(await scrapeEnd).toMatch(/^(end|ECONNRESET)$/);
    } finally {
      scrape.destroy();
      server.child.kill('SIGKILL');
      await setup.drop();
    }
  });

  test.each([0, 1])(
    'when 16 keep-alive clients load the server through 3 SIGTERMs with SHUTDOWN_DRAIN_SECONDS=%i, then no request is reset or answered non-2xx: a client only sees its connection refused',
    async (drainSeconds) => {
      const setup = await createProcessDatabase('shutdown-');
      const runs: Array<ReturnType<typeof tally> & { code: number | null; stoppedAfterMs: number }> = [];
      try {
        for (let run = 0; run < 3; run++) {
          const { server, port, base } = await startServer(setup.cwd, setup.database, drainSeconds);
          try {
            const load = loadUntilExit({ base, port, apiKey: await apiKeyFor(server, setup, 'shutdown'), exited: server.exited });
            await sleep(1000);
            await load.settled();
            const signalledAt = Date.now();
            load.signal();
            server.child.kill('SIGTERM');
            const code = await server.exited;
            const stoppedAfterMs = Date.now() - signalledAt;
            await load.done;
            runs.push({ ...tally(load.outcomes, load.connections), code, stoppedAfterMs });
            console.info(`SIGTERM ${run + 1}/3, ${CLIENTS} keep-alive clients, drain ${drainSeconds} s: ${JSON.stringify(runs[run])}`);
          } finally {
            server.child.kill('SIGKILL');
          }
        }

        for (const run of runs) {
          expect(run).toMatchObject({ code: 0, resets: 0, non2xx: [] });
          expect(run.succeeded).toBeGreaterThan(50);
          // Kept alive: the clients sent many requests per connection before the signal.
          expect(run.requestsBeforeSignal).toBeGreaterThan(2 * run.connectionsBeforeSignal);
        }
        // One pet per 201 answer: no create was lost or half-done.
        expect(await countPets(setup.database)).toBe(runs.reduce((sum, run) => sum + run.created, 0));
      } finally {
        await setup.drop();
      }
    },
    120_000,
  );
});
