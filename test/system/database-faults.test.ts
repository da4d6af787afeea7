import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Client, createClient } from 'graphql-ws';
import { In } from 'typeorm';
import WebSocket from 'ws';
import { ApiKeyService } from '../../src/auth/api-key.service';
import type { DatabaseConfig } from '../../src/database/database-config';
import { openDatabase } from '../../src/database/open-database';
import { DATABASE_DEADLINES } from '../../src/limits';
import { Pet } from '../../src/pets/pet.entity';
import { type PrivateServer, startPrivateMariadb } from '../helpers/private-servers';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { type HttpResult, request, startTestApp, type TestApp } from '../helpers/test-app';
import { createTestDatabase, describeOnMysql } from '../helpers/test-database';

/**
 * The database fails under the app, for real: a TCP proxy between the app and MariaDB cuts or
 * stalls the connections, or a MariaDB of the test's own is paused. Measured times are printed;
 * a duration is asserted only where it is the promise itself ("answered within 3 s" of a 2 s
 * deadline), with that margin. MySQL only (describeOnMysql): the embedded database cannot fail
 * this way; skipped on the embedded run, run in the MariaDB run.
 */

describe('the fault proxy itself', () => {
  test('when it cuts, stalls and restores a real connection, then traffic stops and passes again', async () => {
    const t = await startTestApp();
    const proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(t.url).port) });
    const through = () => fetch(`http://127.0.0.1:${proxy.port}/v1/openapi.json`, { signal: AbortSignal.timeout(500) });
    try {
      expect((await through()).status).toBe(200);
      proxy.cut();
      await expect(through()).rejects.toThrow();
      proxy.restore();
      expect((await through()).status).toBe(200);
      proxy.stall();
      await expect(through()).rejects.toThrow(); // no answer: the 500 ms abort ends it
      proxy.restore();
    } finally {
      await proxy.close();
      await t.close();
    }
  });
});

describeOnMysql('when the database fails', () => {
  let t: TestApp;
  let proxy: TcpProxy;
  let drop: () => Promise<void>;
  let direct: DatabaseConfig;

  beforeAll(async () => {
    const test = await createTestDatabase();
    drop = test.drop;
    direct = test.database;
    const url = new URL((test.database as { url: string }).url);
    proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 3306) });
    url.host = `127.0.0.1:${proxy.port}`;
    t = await startTestApp({ database: { type: 'mysql', url: url.toString() } });
  });
  afterAll(async () => {
    proxy.restore();
    await t.close();
    await proxy.close();
    await drop();
  });

  async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
    const start = performance.now();
    const result = await work();
    return [result, Math.round(performance.now() - start)];
  }

  async function untilHealthy(): Promise<number> {
    const start = performance.now();
    for (;;) {
      const result = await request(t, 'GET', '/v1/pets');
      if (result.status === 200) return Math.round(performance.now() - start);
      expect(result.status).toBe(503);
      if (performance.now() - start > 15_000) throw new Error('no recovery within 15 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  test('when connections are cut, then 503 SERVICE_UNAVAILABLE with Retry-After, and the service recovers by itself', async () => {
    expect((await request(t, 'GET', '/v1/pets')).status).toBe(200);
    proxy.cut();
    const [down, detectMs] = await timed(() => request(t, 'GET', '/v1/pets'));
    expect(down.status).toBe(503);
    expect(down.body).toEqual({ code: 'SERVICE_UNAVAILABLE', message: expect.any(String), status: 503 });
    expect(down.headers.get('retry-after')).toBe('1');
    for (const accept of ['application/json', 'application/graphql-response+json']) {
      // No field resolved: the HTTP answer of REST, in either GraphQL format.
      const gql = await request(t, 'POST', '/graphql', { body: { query: '{ pets { id } }' }, headers: { accept } });
      expect([gql.status, gql.headers.get('retry-after'), gql.body.data]).toEqual([503, '1', null]);
      expect(gql.body.errors).toEqual([expect.objectContaining({ path: ['pets'], extensions: { code: 'SERVICE_UNAVAILABLE', retryAfterSeconds: 1 } })]);
      // Another field resolved: 200, and the failed field's error says when to retry.
      const partial = await request(t, 'POST', '/graphql', { body: { query: '{ __typename pet(id: "1") { id } }' }, headers: { accept } });
      expect([partial.status, partial.body.data]).toEqual([200, { __typename: 'Query', pet: null }]);
      expect(partial.body.errors).toEqual([expect.objectContaining({ path: ['pet'], extensions: { code: 'SERVICE_UNAVAILABLE', retryAfterSeconds: 1 } })]);
    }
    proxy.restore();
    const recoverMs = await untilHealthy();
    console.info(`database cut: 503 after ${detectMs} ms; recovered ${recoverMs} ms after the database returned`);
  });

  test('when the database stalls, then requests end with 503 instead of hanging, and the pool is not exhausted', async () => {
    proxy.stall();
    const [answers, detectMs] = await timed(() => Promise.all(Array.from({ length: 15 }, () => request(t, 'GET', '/v1/pets'))));
    expect(answers.map((a) => a.status)).toEqual(Array(15).fill(503));
    proxy.cut();
    proxy.restore();
    const recoverMs = await untilHealthy();
    console.info(`database stall: ${answers.length} concurrent requests all answered 503 within ${detectMs} ms; recovered in ${recoverMs} ms`);
  });

  /** Lets the stalled connections go (the server sees them closed) and waits for the service. */
  async function endStall(): Promise<number> {
    proxy.cut();
    proxy.restore();
    return untilHealthy();
  }

  const countNamed = (name: string) => t.dataSource.getRepository(Pet).countBy({ name });

  test("when the database runs an Idempotency-Key create's INSERT and then stalls, then 503 with Retry-After, and nothing is stored", async () => {
    const name = `insert-stall-key-${randomUUID()}`;
    proxy.stallAt('INSERT INTO `pet`', { deliver: true });
    const [answer, ms] = await timed(() => request(t, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers: { 'idempotency-key': name } }));
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('1');
    const recoverMs = await endStall();
    expect(await countNamed(name)).toBe(0);
    console.info(`stall after the INSERT, in a transaction: 503 after ${ms} ms, nothing stored (rolled back); recovered in ${recoverMs} ms`);
  });

  test("when every pooled connection is taken until a create's deadline, then it answers 503 with Retry-After, and nothing is stored", async () => {
    const name = `pool-wait-${randomUUID()}`;
    expect((await request(t, 'GET', '/v1/pets')).status).toBe(200); // the API key is cached: the create is the only call to wait
    const held = await Promise.all(
      Array.from({ length: DATABASE_DEADLINES.poolSize }, async () => {
        const runner = t.dataSource.createQueryRunner('master');
        await runner.connect();
        return runner;
      }),
    );
    let answer: HttpResult;
    let ms: number;
    try {
      [answer, ms] = await timed(() => request(t, 'POST', '/v1/pets', { body: { name, categoryId: 1 } }));
    } finally {
      await Promise.all(held.map((runner) => runner.release()));
    }
    expect([answer.status, answer.body.code, answer.headers.get('retry-after')]).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
    await sleep(500); // a create sent late, were one to be, would be stored by now
    expect(await countNamed(name)).toBe(0);
    console.info(`create waiting for a pooled connection: 503 after ${ms} ms, nothing stored`);
  });

  test("when a request's key lookup waits 1.2 s for a pooled connection and its read then stalls, then it answers 503 2 s after it arrived: its calls share one deadline", async () => {
    // Created by another process, so unknown to the app's key cache: its lookup is a database call.
    const other = await openDatabase(direct);
    const { key } = await new ApiKeyService(other).create('one-budget');
    await other.close();
    const held = await Promise.all(
      Array.from({ length: DATABASE_DEADLINES.poolSize }, async () => {
        const runner = t.dataSource.createQueryRunner('master');
        await runner.connect();
        return runner;
      }),
    );
    proxy.stallAt('FROM `pet`', { deliver: true });
    const answered = timed(() => request(t, 'GET', '/v1/pets', { apiKey: key }));
    await sleep(1200);
    await Promise.all(held.map((runner) => runner.release()));
    const [answer, ms] = await answered;
    await endStall();
    expect([answer.status, answer.body.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    // A deadline of its own for the read would end it 1.2 + 2 s after arrival.
    expect(ms).toBeGreaterThanOrEqual(DATABASE_DEADLINES.callMs - 50);
    expect(ms).toBeLessThan(DATABASE_DEADLINES.callMs + 600);
    console.info(`key lookup waited 1.2 s, then the read stalled: 503 after ${ms} ms`);
  });

  test.each([
    { surface: 'REST', marker: 'INSERT INTO `pet`', what: 'the one INSERT of a create without an Idempotency-Key' },
    { surface: 'GraphQL', marker: 'INSERT INTO `pet`', what: 'the one INSERT of a create without an Idempotency-Key' },
    { surface: 'REST', marker: 'COMMIT', what: 'the COMMIT of a create with an Idempotency-Key' },
    { surface: 'GraphQL', marker: 'COMMIT', what: 'the COMMIT of a create with an Idempotency-Key' },
  ])(
    'when the database receives $what and then stalls, then $surface answers GATEWAY_TIMEOUT: the outcome is unknown (here it was stored)',
    async ({ surface, marker }) => {
      const name = `unconfirmed-${randomUUID()}`;
      const headers: Record<string, string> = marker === 'COMMIT' ? { 'idempotency-key': name } : {};
      proxy.stallAt(marker, { deliver: true });
      const [answer, ms] = await timed(() =>
        surface === 'REST'
          ? request(t, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers })
          : request(t, 'POST', '/graphql', {
              body: { query: 'mutation ($n: String!) { createPet(input: { name: $n, categoryId: 1 }) { id } }', variables: { n: name } },
              headers,
            }),
      );
      if (surface === 'REST') {
        expect(answer.status).toBe(504);
        expect(answer.body).toEqual({ code: 'GATEWAY_TIMEOUT', message: expect.stringMatching(/Idempotency-Key/), status: 504 });
        expect(answer.headers.get('retry-after')).toBeNull();
      } else {
        expect([answer.status, answer.body.data, answer.body.errors[0].extensions.code]).toEqual([504, null, 'GATEWAY_TIMEOUT']);
      }
      await endStall();
      expect(await countNamed(name)).toBe(1);
      console.info(`stall after ${marker} (${surface}): GATEWAY_TIMEOUT after ${ms} ms; the pet was stored`);
    },
  );

  test('when a create with an Idempotency-Key gets GATEWAY_TIMEOUT, then its retry returns the stored pet instead of a second one', async () => {
    const name = `commit-stall-key-${randomUUID()}`;
    const create = () => request(t, 'POST', '/v1/pets', { body: { name, categoryId: 4 }, headers: { 'idempotency-key': name } });
    proxy.stallAt('COMMIT', { deliver: true });
    expect((await create()).status).toBe(504);
    await endStall();
    const retry = await create();
    expect(retry.status).toBe(201);
    expect(await countNamed(name)).toBe(1);
    expect(retry.body.id).toBe((await t.dataSource.getRepository(Pet).findOneByOrFail({ name })).id);
  });

  /** A `petCreated` subscriber on the app, collecting the names it is told of. */
  async function subscribeToCreates(): Promise<{ names: string[]; client: Client }> {
    const names: string[] = [];
    const client = createClient({
      url: `${t.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      connectionParams: { Authorization: `Bearer ${t.apiKey}` },
      retryAttempts: 0,
    });
    await new Promise<void>((resolve, reject) => {
      client.subscribe<{ petCreated: { name: string } }>(
        { query: 'subscription { petCreated { name } }' },
        { next: ({ data }) => names.push(data!.petCreated.name), error: reject, complete: () => undefined },
      );
      // Acknowledged: the subscription runs once the server has answered a create made after it.
      client.on('connected', () => setTimeout(resolve, 100));
    });
    return { names, client };
  }

  test('when an Idempotency-Key create answered GATEWAY_TIMEOUT was stored, then its petCreated event is sent once, after the database answers again, and its replay sends none', async () => {
    const subscriber = await subscribeToCreates();
    try {
      const name = `commit-stall-event-${randomUUID()}`;
      const create = () => request(t, 'POST', '/v1/pets', { body: { name, categoryId: 5 }, headers: { 'idempotency-key': name } });
      proxy.stallAt('COMMIT', { deliver: true });
      expect((await create()).status).toBe(504);
      expect(subscriber.names).not.toContain(name);
      const back = performance.now();
      await endStall();
      while (!subscriber.names.includes(name) && performance.now() - back < 10_000) await sleep(50);
      const announcedMs = Math.round(performance.now() - back);
      expect((await create()).status).toBe(201);
      await sleep(1_500); // a second event, were one to come, would be here by now
      expect(subscriber.names.filter((n) => n === name)).toEqual([name]);
      expect(await countNamed(name)).toBe(1);
      console.info(`create answered 504 but stored: petCreated sent once, ${announcedMs} ms after the database was back`);
    } finally {
      await subscriber.client.dispose();
    }
  }, 30_000);

  test('when a create without an Idempotency-Key answered GATEWAY_TIMEOUT was stored, then its petCreated event is sent once: the feed stamps every committed pet', async () => {
    const subscriber = await subscribeToCreates();
    try {
      const name = `insert-stall-event-${randomUUID()}`;
      proxy.stallAt('INSERT INTO `pet`', { deliver: true });
      expect((await request(t, 'POST', '/v1/pets', { body: { name, categoryId: 5 } })).status).toBe(504);
      const back = performance.now();
      await endStall();
      while (!subscriber.names.includes(name) && performance.now() - back < 10_000) await sleep(50);
      await sleep(1_500); // a second event, were one to come, would be here by now
      expect(await countNamed(name)).toBe(1);
      expect(subscriber.names.filter((n) => n === name)).toEqual([name]);
    } finally {
      await subscriber.client.dispose();
    }
  }, 30_000);

  test('when a create is cut off midway and retried with its Idempotency-Key, then exactly one pet exists', async () => {
    const name = `cut-${randomUUID()}`;
    const create = () => request(t, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers: { 'idempotency-key': name } });
    const first = create();
    setTimeout(() => proxy.cut(), 3);
    const firstAnswer = await first;
    expect([201, 503]).toContain(firstAnswer.status);
    proxy.restore();
    await untilHealthy();
    let retry = await create();
    const start = performance.now();
    while (retry.status === 409 && performance.now() - start < 30_000) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      retry = await create();
    }
    expect(retry.status).toBe(201);
    expect(await t.dataSource.getRepository(Pet).countBy({ name })).toBe(1);
    console.info(`create cut off midway (first answer ${firstAnswer.status}): retry answered 201 after ${Math.round(performance.now() - start)} ms; one pet`);
  }, 60_000);
});

/**
 * A stalled database, for real (docs/failures.md "Measured"): a MariaDB of the test's own is paused with
 * SIGSTOP for 10 s under a steady load of reads, creates with and without an Idempotency-Key,
 * GraphQL and `/readyz`, then resumed.
 */
const STALL_MS = 10_000;

/** One request of the load. */
interface Outcome {
  kind: string;
  startedAt: number;
  durationMs: number;
  status: number;
  /** REST `code`, or the first GraphQL `extensions.code`; undefined on success. */
  code?: string;
  retryAfter: string | null;
  /** The name sent, for creates. */
  name?: string;
}

const KINDS = ['rest-list', 'rest-create', 'rest-create-idempotent', 'graphql-list', 'graphql-create'] as const;

describeOnMysql('when the database itself stalls (a private MariaDB paused with SIGSTOP)', () => {
  let mariadb: PrivateServer;
  let t: TestApp;

  beforeAll(async () => {
    mariadb = await startPrivateMariadb();
    t = await startTestApp({ database: { type: 'mysql', url: mariadb.url } });
  }, 60_000);
  afterAll(async () => {
    mariadb?.resume();
    await t?.close();
    await mariadb?.stop();
  });

  async function send(kind: (typeof KINDS)[number] | 'readyz'): Promise<Outcome> {
    const name = `stall-${randomUUID()}`;
    const startedAt = Date.now();
    let result: HttpResult;
    switch (kind) {
      case 'rest-list':
        result = await request(t, 'GET', '/v1/pets?limit=5');
        break;
      case 'rest-create':
        result = await request(t, 'POST', '/v1/pets', { body: { name, categoryId: 1 } });
        break;
      case 'rest-create-idempotent':
        result = await request(t, 'POST', '/v1/pets', { body: { name, categoryId: 2 }, headers: { 'idempotency-key': name } });
        break;
      case 'graphql-list':
        result = await request(t, 'POST', '/graphql', { body: { query: '{ pets(limit: 5) { id name } }' } });
        break;
      case 'graphql-create':
        result = await request(t, 'POST', '/graphql', {
          body: { query: 'mutation ($n: String!) { createPet(input: { name: $n, categoryId: 3 }) { id } }', variables: { n: name } },
        });
        break;
      case 'readyz':
        result = await request(t, 'GET', '/readyz', { apiKey: null });
        break;
    }
    const code = kind.startsWith('graphql') ? result.body?.errors?.[0]?.extensions?.code : result.status >= 300 ? result.body?.code : undefined;
    return {
      kind,
      startedAt,
      durationMs: Date.now() - startedAt,
      status: result.status,
      code,
      retryAfter: result.headers.get('retry-after'),
      ...(kind.includes('create') && { name }),
    };
  }

  test('then every request ends within 3 s with 2xx or 503 + Retry-After, no 503 create is stored, and service is back within 2 s of the resume', async () => {
    const outcomes: Outcome[] = [];
    let running = true;
    const worker = async (n: number) => {
      for (let i = n; running; i++) {
        outcomes.push(await send(KINDS[i % KINDS.length]));
        await sleep(25);
      }
    };
    const prober = async () => {
      while (running) {
        outcomes.push(await send('readyz'));
        await sleep(100);
      }
    };
    const load = Promise.all([...Array.from({ length: 10 }, (_, n) => worker(n)), prober()]);

    await sleep(1500);
    const pausedAt = Date.now();
    mariadb.pause();
    await sleep(STALL_MS);
    mariadb.resume();
    const resumedAt = Date.now();
    await sleep(4000);
    running = false;
    await load;

    const during = outcomes.filter((o) => o.startedAt >= pausedAt && o.startedAt < resumedAt);
    const failures = outcomes.filter((o) => o.status >= 300 || o.code !== undefined);
    const slowest = Math.max(...during.map((o) => o.durationMs));
    const lateFailures = failures.filter((o) => o.startedAt >= resumedAt + 2000);
    const lastFailureAfterResume = Math.max(0, ...failures.filter((o) => o.startedAt >= resumedAt).map((o) => o.startedAt - resumedAt));
    const summary = {
      requests: outcomes.length,
      startedDuringStall: during.length,
      answered503: failures.filter((o) => o.status === 503 || o.code === 'SERVICE_UNAVAILABLE').length,
      outcomeUnknown: failures.filter((o) => o.code === 'GATEWAY_TIMEOUT').length,
      slowestDuringStallMs: slowest,
      readyzSlowestMs: Math.max(...during.filter((o) => o.kind === 'readyz').map((o) => o.durationMs)),
      lastFailureStartedMsAfterResume: lastFailureAfterResume,
    };
    console.info(`Database paused ${STALL_MS} ms under load: ${JSON.stringify(summary)}`);

    expect(during.filter((o) => o.kind === 'readyz').length).toBeGreaterThan(10);
    expect(during.filter((o) => o.kind !== 'readyz').length).toBeGreaterThan(20);
    // Every request that started during the stall was answered within 3 s; readiness probes within 1 s.
    expect(during.filter((o) => o.durationMs > 3000)).toEqual([]);
    expect(summary.readyzSlowestMs).toBeLessThan(1000);
    // Every failure is "unavailable, retry" (REST: 503 + Retry-After; GraphQL: the same code),
    // or, for a create whose one INSERT (no Idempotency-Key) or COMMIT was sent but never confirmed, "outcome unknown".
    for (const o of failures) {
      const unknownCreate = o.code === 'GATEWAY_TIMEOUT' && o.kind.includes('create');
      expect({ kind: o.kind, code: unknownCreate ? 'SERVICE_UNAVAILABLE' : o.code }).toEqual({ kind: o.kind, code: 'SERVICE_UNAVAILABLE' });
      if (!o.kind.startsWith('graphql') && !unknownCreate) expect({ status: o.status, retryAfter: o.retryAfter }).toEqual({ status: 503, retryAfter: '1' });
    }
    // Back to normal within 2 s of the resume.
    expect(lateFailures).toEqual([]);
    // A create answered "unavailable" stored nothing: a retry cannot make a duplicate.
    const refusedNames = failures.filter((o) => o.name && o.code === 'SERVICE_UNAVAILABLE').map((o) => o.name!);
    expect(refusedNames.length).toBeGreaterThan(0);
    expect(await t.dataSource.getRepository(Pet).countBy({ name: In(refusedNames) })).toBe(0);
    // Every create answered 2xx is stored exactly once.
    const storedNames = outcomes.filter((o) => o.name && o.status < 300 && o.code === undefined).map((o) => o.name!);
    expect(await t.dataSource.getRepository(Pet).countBy({ name: In(storedNames) })).toBe(storedNames.length);

    // No broken connection is left in the pool: three pools' worth of concurrent reads all answer at once.
    const after = await Promise.all(Array.from({ length: 30 }, () => send('rest-list')));
    expect(after.map((o) => o.status)).toEqual(Array(30).fill(200));
    expect(Math.max(...after.map((o) => o.durationMs))).toBeLessThan(1000);
  }, 60_000);
});
