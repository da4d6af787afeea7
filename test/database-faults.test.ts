import { randomUUID } from 'node:crypto';
import { Pet } from '../src/pets/pet.entity';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy';
import { request, startTestApp, type TestApp } from './helpers/test-app';
import { TEST_DATABASE_URL, createTestDatabase } from './helpers/test-database';

/**
 * The database fails under the app, for real: a TCP proxy between the app and MariaDB cuts or
 * stalls the connections. Measured times are printed, not asserted (machines are noisy).
 * MySQL only: the embedded database cannot fail this way; defined in the MariaDB run, which
 * .ci/run always makes.
 */
const onMysql = TEST_DATABASE_URL ? describe : () => undefined;

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

onMysql('when the database fails', () => {
  let t: TestApp;
  let proxy: TcpProxy;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const test = await createTestDatabase();
    drop = test.drop;
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
    const gql = await request(t, 'POST', '/graphql', { body: { query: '{ pets { id } }' } });
    expect(gql.body.errors[0].extensions.code).toBe('SERVICE_UNAVAILABLE');
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
    console.info(`database stall: 15 concurrent requests all answered 503 within ${detectMs} ms; recovered in ${recoverMs} ms`);
  });

  test('when a create is cut off midway and retried with its Idempotency-Key, then exactly one pet exists', async () => {
    const name = `cut-${randomUUID()}`;
    const create = () =>
      request(t, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers: { 'idempotency-key': name } });
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
