import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { REDIS_TIMEOUTS } from '../../src/limits';
import { createLogger } from '../../src/observability/logger';
import { type Metrics, createMetrics } from '../../src/observability/metrics.registry';
import { type PrivateServer, startPrivateRedis } from '../helpers/private-servers';
import { type TestApp, request, startTestApp } from '../helpers/test-app';

/**
 * Redis stopped and restarted under load (docs/failures.md "Redis"): with RATE_LIMIT_ON_REDIS_FAILURE=serve-local (the
 * default) two instances keep serving on counters of their own, /readyz stays 200 naming Redis degraded,
 * petstore_redis_up says 0, one warning per instance; once Redis is back, within 2 s they count in it together again.
 * With `refuse`, calls and /readyz answer 503 while it is away. Each scenario has its own private redis-server.
 */

/** The promise of docs/failures.md: the shared counters are used again within this of Redis answering. */
const BACK_WITHIN_MS = 2000;
const QUOTA = 1000;
const REDIS_COMMAND_TIMEOUT_MS = REDIS_TIMEOUTS.commandMs;

/** An app whose log lines at info and above are kept, with metrics of its own. */
interface ObservedApp {
  t: TestApp;
  lines: LogLine[];
  metrics: Metrics;
}

/** One pino line as the sink parsed it: its level, message and the component it names, if any. */
interface LogLine {
  level: number;
  msg: string;
  component?: string;
}

async function startObserved(env: Record<string, string>): Promise<ObservedApp> {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const metrics = createMetrics();
  const t = await startTestApp({ env, observe: { logger: createLogger('info', sink), metrics } });
  return { t, lines, metrics };
}

const WARN = 40;
const INFO = 30;
const redisLines = ({ lines }: ObservedApp, level: number, start: string) => lines.filter((line) => line.level === level && line.msg.startsWith(start));

async function redisUp({ metrics }: ObservedApp): Promise<number> {
  const { values } = await metrics.registry.getSingleMetric('petstore_redis_up')!.get();
  return values[0].value;
}

/** `RateLimit: "default";r=<remaining>;t=<seconds>` (RFC draft headers, docs/security.md "Limits"). */
const remainingOf = (result: { headers: Headers }) => Number(/;r=(\d+);/.exec(result.headers.get('ratelimit') ?? '')?.[1]);

/** One unauthenticated call: charged to `ip:127.0.0.1`, a counter the two instances share through Redis. */
const anonymous = (app: ObservedApp) => request(app.t, 'GET', '/v1/pets', { apiKey: null });

/** Keyed GET /v1/pets in `loops` loops per app until stopped; every status is kept. */
function steadyLoad(apps: ObservedApp[], loops = 2) {
  const statuses: number[] = [];
  let running = true;
  const loop = async (app: ObservedApp) => {
    // From another address (TRUST_PROXY): a key's first lookups are charged to its address, and 127.0.0.1 is the probes'.
    while (running) {
      const answer = await request(app.t, 'GET', '/v1/pets', { headers: { 'x-forwarded-for': '10.0.0.1' } }).catch(() => ({ status: 0 }));
      statuses.push(answer.status);
    }
  };
  const done = Promise.all(apps.flatMap((app) => Array.from({ length: loops }, () => loop(app))));
  return {
    statuses,
    stop: async () => {
      running = false;
      await done;
      return statuses;
    },
  };
}

async function readyz(app: ObservedApp) {
  return request(app.t, 'GET', '/readyz', { apiKey: null });
}

/** Polls `probe` every 20 ms until it is true; returns the milliseconds it took. */
async function until(probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const start = performance.now();
  for (;;) {
    if (await probe()) return Math.round(performance.now() - start);
    if (performance.now() - start > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(20);
  }
}

describe('when the Redis of two instances stops and restarts under load (RATE_LIMIT_ON_REDIS_FAILURE unset: serve-local)', () => {
  let redis: PrivateServer;
  let a: ObservedApp;
  let b: ObservedApp;
  let port: number;
  const namespace = `outage-${randomUUID()}:`;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    port = Number(new URL(redis.url).port);
    const env = { REDIS_URL: redis.url, RATE_LIMIT_UNAUTHENTICATED_MAX: String(QUOTA), REDIS_NAMESPACE: namespace, TRUST_PROXY: '127.0.0.1' };
    a = await startObserved(env);
    b = await startObserved(env);
  });
  afterAll(async () => {
    await a?.t.close();
    await b?.t.close();
    await redis?.stop();
  });

  test('then they keep serving on counters of their own, say so once, and share the counters again within 2 s of its return', async () => {
    // Shared: B's charge follows A's.
    const first = remainingOf(await anonymous(a));
    expect(remainingOf(await anonymous(b))).toBe(first - 1);
    expect((await readyz(a)).body.redis).toMatchObject({ state: 'ok', onFailure: 'serve-local' });
    expect([await redisUp(a), await redisUp(b)]).toEqual([1, 1]);

    const load = steadyLoad([a, b]);
    await sleep(300);
    await redis.stop();
    const lostAfter = await until(async () => (await readyz(a)).body.redis.state === 'degraded', 3000, 'A sees Redis degraded');
    await sleep(1000);

    // Degraded: every answer a 200, /readyz 200 naming Redis, the metric 0, each instance counting alone.
    for (const app of [a, b]) {
      const ready = await readyz(app);
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({ status: 'ok', redis: { state: 'degraded', onFailure: 'serve-local' } });
      expect(await redisUp(app)).toBe(0);
    }
    const localA = remainingOf(await anonymous(a));
    const localB = remainingOf(await anonymous(b));
    expect([localA, localB]).toEqual([QUOTA - 1, QUOTA - 1]);
    const whileAway = load.statuses.length;

    // Back on the same port, empty.
    redis = await startPrivateRedis(port);
    const store = new Redis(redis.url);
    let sharedAfter: number;
    try {
      sharedAfter = await until(
        async () => {
          const fromA = remainingOf(await anonymous(a));
          const fromB = remainingOf(await anonymous(b));
          // Counted in Redis, and by both: the store holds both charges, and B's follows A's.
          const stored = Number(await store.get(`${namespace}rate-limit:ip:127.0.0.1`));
          return fromB === fromA - 1 && stored === QUOTA - fromB;
        },
        BACK_WITHIN_MS,
        'both instances count in Redis again',
      );
    } finally {
      store.disconnect();
    }
    await sleep(300);
    const statuses = await load.stop();

    const unexpected = statuses.filter((status) => status !== 200);
    expect({ requests: statuses.length, unexpected }).toEqual({ requests: statuses.length, unexpected: [] });
    expect(statuses.length).toBeGreaterThan(whileAway / 2);
    for (const app of [a, b]) {
      expect((await readyz(app)).body.redis).toMatchObject({ state: 'ok' });
      expect(await redisUp(app)).toBe(1);
      expect(redisLines(app, WARN, 'Redis unreachable')).toHaveLength(1);
      // Nothing else of the outage warns: no line per reconnection attempt, connection, poke or call.
      // The database's own slow-statement warning is not the outage's: the shared MariaDB may be slow under load.
      const warnings = app.lines.filter((line) => line.level >= WARN && line.component !== 'database');
      expect(warnings.map((line) => line.msg)).toEqual([expect.stringMatching(/^Redis unreachable/)]);
      expect(redisLines(app, INFO, 'Redis answers again')).toHaveLength(1);
    }
    console.info(
      `Redis stopped under load: degraded seen after ${lostAfter} ms; ${statuses.length} keyed calls, all 200; ` +
        `counters shared again ${sharedAfter} ms after redis-server was accepting connections`,
    );
  });
});

describe('when the Redis of an instance with RATE_LIMIT_ON_REDIS_FAILURE=refuse stops and restarts', () => {
  let redis: PrivateServer;
  let c: ObservedApp;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    c = await startObserved({ REDIS_URL: redis.url, RATE_LIMIT_ON_REDIS_FAILURE: 'refuse' });
  });
  afterAll(async () => {
    await c?.t.close();
    await redis?.stop();
  });

  test('then calls and /readyz answer 503 while it is away, and 200 again within 2 s of its return', async () => {
    expect((await request(c.t, 'GET', '/v1/pets')).status).toBe(200);
    expect((await readyz(c)).status).toBe(200);
    const port = Number(new URL(redis.url).port);
    await redis.stop();
    await until(async () => (await readyz(c)).status === 503, 3000, '/readyz fails');
    const ready = await readyz(c);
    expect(ready.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', redis: { state: 'degraded', onFailure: 'refuse' } });
    const call = await request(c.t, 'GET', '/v1/pets');
    expect([call.status, call.body.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    expect(await redisUp(c)).toBe(0);

    redis = await startPrivateRedis(port);
    const back = await until(
      async () => (await request(c.t, 'GET', '/v1/pets')).status === 200 && (await readyz(c)).status === 200,
      BACK_WITHIN_MS,
      'calls and /readyz pass again',
    );
    expect(await redisUp(c)).toBe(1);
    expect(redisLines(c, WARN, 'Redis unreachable')).toHaveLength(1);
    expect(redisLines(c, INFO, 'Redis answers again')).toHaveLength(1);
    console.info(`RATE_LIMIT_ON_REDIS_FAILURE=refuse: 503 while Redis was away; 200 again ${back} ms after it was back`);
  });
});

describe('when the Redis of an instance stalls (a private redis-server paused; RATE_LIMIT_ON_REDIS_FAILURE unset)', () => {
  let redis: PrivateServer;
  let d: ObservedApp;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    d = await startObserved({ REDIS_URL: redis.url });
  });
  afterAll(async () => {
    redis?.resume();
    await d?.t.close();
    await redis?.stop();
  });

  test('then calls answer 200 without hanging, /readyz names it degraded once a command times out, and it is used again once it resumes', async () => {
    expect((await request(d.t, 'GET', '/v1/pets')).status).toBe(200);
    redis.pause();
    const start = performance.now();
    // The first calls wait for their commands' 1 s timeout, then count in memory.
    const first = await request(d.t, 'GET', '/v1/pets');
    const firstMs = Math.round(performance.now() - start);
    expect(first.status).toBe(200);
    expect(firstMs).toBeLessThan(3000); // the promise: no hang
    const degradedAfter = await until(async () => (await readyz(d)).body.redis.state === 'degraded', 3000, '/readyz names Redis degraded');
    // The stalled connection is dropped: calls no longer wait for it.
    const after = performance.now();
    expect((await request(d.t, 'GET', '/v1/pets')).status).toBe(200);
    const afterMs = Math.round(performance.now() - after);
    expect(afterMs).toBeLessThan(REDIS_COMMAND_TIMEOUT_MS);
    expect((await readyz(d)).status).toBe(200);

    redis.resume();
    const back = await until(async () => (await readyz(d)).body.redis.state === 'ok', BACK_WITHIN_MS, 'Redis used again');
    expect(redisLines(d, WARN, 'Redis unreachable')).toHaveLength(1);
    expect(redisLines(d, INFO, 'Redis answers again')).toHaveLength(1);
    console.info(
      `Redis paused (serve-local): first call 200 after ${firstMs} ms; degraded in /readyz ${degradedAfter} ms later; ` +
        `then calls 200 in ${afterMs} ms; ok again ${back} ms after it resumed`,
    );
  });

  test('when an instance starts while it stalls, then it starts, serves on counters of its own, and uses it once it resumes', async () => {
    redis.pause();
    const start = performance.now();
    const late = await startObserved({ REDIS_URL: redis.url });
    try {
      const startMs = Math.round(performance.now() - start);
      expect((await request(late.t, 'GET', '/v1/pets')).status).toBe(200);
      expect((await readyz(late)).body).toMatchObject({ status: 'ok', redis: { state: 'degraded' } });
      redis.resume();
      await until(async () => (await readyz(late)).body.redis.state === 'ok', BACK_WITHIN_MS, 'Redis used once it resumes');
      expect(redisLines(late, WARN, 'Redis unreachable')).toHaveLength(1);
      console.info(`an instance started while its Redis was paused: ready after ${startMs} ms`);
    } finally {
      redis.resume();
      await late.t.close();
    }
  });
});
