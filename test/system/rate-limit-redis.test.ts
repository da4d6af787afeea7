import { randomUUID } from 'node:crypto';
import { type PrivateServer, startPrivateRedis } from '../helpers/private-servers';
import { describeGraphqlCharging, expectLimited } from '../helpers/graphql-charging';
import { graphql, request, startTestApp, type TestApp } from '../helpers/test-app';

/** Rate-limit counters in Redis (docs/security.md "Limits", docs/failures.md): shared, charged, and when Redis fails. */

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describeGraphqlCharging('in Redis', REDIS_URL);

describe('counters shared through Redis', () => {
  test('when two instances share REDIS_URL, then a key spends one allowance across both', async () => {
    const shared = { RATE_LIMIT_MAX: '2', RATE_LIMIT_UNAUTHENTICATED_MAX: '2', REDIS_NAMESPACE: `rl-${randomUUID()}:`, REDIS_URL };
    const a = await startTestApp({ env: shared });
    const b = await startTestApp({ env: shared });
    try {
      // Requests without a key count per IP address: 127.0.0.1 on both instances.
      expect((await request(a, 'GET', '/v1/pets', { apiKey: null })).status).toBe(401);
      expect((await request(b, 'GET', '/v1/pets', { apiKey: null })).status).toBe(401);
      expectLimited(await request(a, 'GET', '/v1/pets', { apiKey: null }));
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('a 304 in Redis', () => {
  test.each(['secret', 'publishable'] as const)(
    'when a %s key is answered 304, then its unit goes back to its counters in Redis, and a 200 after spends one',
    async (kind) => {
      const t = await startTestApp({ env: { RATE_LIMIT_MAX: '5', REDIS_NAMESPACE: `rl-${randomUUID()}:`, REDIS_URL } });
      try {
        const { key } = await t.apiKeys.create({ name: kind, kind });
        const remaining = (result: { headers: Headers }) => /;r=(\d+);/.exec(result.headers.get('ratelimit') ?? '')?.[1];
        const page = await request(t, 'GET', '/v1/pets', { apiKey: key });
        expect(remaining(page)).toBe('4');
        const headers = { 'if-none-match': page.headers.get('etag')! };
        for (let i = 0; i < 3; i++) {
          const notModified = await request(t, 'GET', '/v1/pets', { apiKey: key, headers });
          expect([notModified.status, remaining(notModified)]).toEqual([304, '4']);
        }
        expect(remaining(await request(t, 'GET', '/v1/pets', { apiKey: key }))).toBe('3');
      } finally {
        await t.close();
      }
    },
  );
});

describe('when the Redis of the counters fails with RATE_LIMIT_ON_REDIS_FAILURE=refuse (a private redis-server, paused and killed)', () => {
  let redis: PrivateServer;
  let t: TestApp;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    t = await startTestApp({
      env: { RATE_LIMIT_MAX: '1000', RATE_LIMIT_UNAUTHENTICATED_MAX: '1000', REDIS_URL: redis.url, RATE_LIMIT_ON_REDIS_FAILURE: 'refuse' },
    });
  });
  afterAll(async () => {
    redis.resume();
    await t.close();
    await redis.stop();
  });

  async function expectUnavailableQuickly(path: '/v1/pets' | '/graphql'): Promise<number> {
    const start = performance.now();
    const result = path === '/graphql' ? await graphql(t, '{ pets { id } }') : await request(t, 'GET', path);
    const ms = Math.round(performance.now() - start);
    expect(result.status).toBe(503);
    expect(path === '/graphql' ? result.body.errors[0].extensions.code : result.body.code).toBe('SERVICE_UNAVAILABLE');
    expect(result.headers.get('retry-after')).toBe('1');
    expect(ms).toBeLessThan(3000); // the promise: no hang (the command timeout is 1 s)
    return ms;
  }

  test('when it stalls, then requests end with 503 and Retry-After instead of hanging, and pass again once it is back', async () => {
    expect((await request(t, 'GET', '/v1/pets')).status).toBe(200);
    redis.pause();
    const rest = await expectUnavailableQuickly('/v1/pets');
    const gql = await expectUnavailableQuickly('/graphql');
    redis.resume();
    // The stalled connection was dropped (its PING failed): the first answer after the reconnection passes.
    const resumed = performance.now();
    let status = 0;
    while (status !== 200 && performance.now() - resumed < 2000) status = (await request(t, 'GET', '/v1/pets')).status;
    expect(status).toBe(200);
    const backMs = Math.round(performance.now() - resumed);
    console.info(`Redis paused: 503 after ${rest} ms (REST) and ${gql} ms (GraphQL); 200 again ${backMs} ms after it resumed`);
  });

  test('when it is gone, then requests end with 503 and Retry-After', async () => {
    await redis.stop();
    const ms = await expectUnavailableQuickly('/v1/pets');
    console.info(`Redis killed: 503 after ${ms} ms`);
  });
});
