import { PET_TABLE, type StatementCounter, countStatements } from './statement-counter';
import { graphql, request, type TestApp, startTestApp } from './test-app';

/** A 429 in the Error shape (REST) or GraphQL's, with Retry-After. */
export function expectLimited(result: { status: number; body: any; headers: Headers }, graphqlShape = false) {
  expect(result.status).toBe(429);
  const code = graphqlShape ? result.body.errors[0].extensions.code : result.body.code;
  expect(code).toBe('TOO_MANY_REQUESTS');
  expect(Number(result.headers.get('retry-after'))).toBeGreaterThan(0);
}

/** A GraphQL document of `k` aliased pet lookups, `{ p0: pet(id: "1") … }`. */
export const lookups = (k: number) => `{ ${Array.from({ length: k }, (_, i) => `p${i}: pet(id: "1") { id name }`).join(' ')} }`;

/**
 * The suite of how GraphQL charges the rate limit (docs/security.md "Limits"), with the counters in
 * memory (test/integration/rate-limit.test.ts) or in Redis (test/system/rate-limit-redis.test.ts).
 *
 * @param where - how the suite is named, e.g. `in memory`.
 * @param redisUrl - REDIS_URL of the app, or undefined for counters in memory.
 */
export function describeGraphqlCharging(where: string, redisUrl: string | undefined): void {
  describe(`GraphQL charges the rate limit for the whole operation (counters ${where})`, () => {
    const BUDGET = 5;
    let t: TestApp;
    let statements: StatementCounter;
    beforeAll(async () => {
      t = await startTestApp({ env: { RATE_LIMIT_MAX: String(BUDGET), RATE_LIMIT_UNAUTHENTICATED_MAX: '100', ...(redisUrl && { REDIS_URL: redisUrl }) } });
      statements = countStatements(t.dataSource);
    });
    afterAll(() => t.close());

    /** A key of its own for each test: a fresh budget. */
    const freshKey = async () => (await t.apiKeys.create('budget')).key;
    const remainingAfter = (result: { headers: Headers }) => result.headers.get('ratelimit')?.match(/;r=(\d+);/)?.[1];

    test('when an operation has as many pet lookups as the budget, then it runs and spends all of it, as many getPet calls would', async () => {
      const apiKey = await freshKey();
      const result = await graphql(t, lookups(BUDGET), undefined, { apiKey });
      expect({ status: result.status, errors: result.body.errors }).toEqual({ status: 200, errors: undefined });
      expect(remainingAfter(result)).toBe('0');
      expectLimited(await request(t, 'GET', '/v1/pets', { apiKey }));
    });

    test('when it has one lookup more than the budget, then it is 429, reads no pet, and spends only its one request', async () => {
      const apiKey = await freshKey();
      statements.reset();
      const result = await graphql(t, lookups(BUDGET + 1), undefined, { apiKey });
      expectLimited(result, true);
      expect(result.body.data).toBeUndefined();
      expect(statements.count(PET_TABLE)).toBe(0);
      const next = await request(t, 'GET', '/v1/pets', { apiKey });
      expect(next.status).toBe(200);
      expect(remainingAfter(next)).toBe(String(BUDGET - 2));
    });

    test('when a list of 100 pets is read, then it spends one request, as GET /v1/pets?limit=100 does, whatever its selection', async () => {
      const apiKey = await freshKey();
      const result = await graphql(t, '{ pets(limit: 100) { id name categoryId status } }', undefined, { apiKey });
      expect(result.status).toBe(200);
      expect(remainingAfter(result)).toBe(String(BUDGET - 1));
      for (let left = BUDGET - 1; left > 0; left--) expect((await graphql(t, '{ __typename }', undefined, { apiKey })).status).toBe(200);
      expectLimited(await graphql(t, '{ __typename }', undefined, { apiKey }), true);
    });

    test('when one operation reads three pages through aliases, then it spends three requests, as three REST pages do', async () => {
      const apiKey = await freshKey();
      const page = 'pets(limit: 100) { id name }';
      const pages = `{ a: ${page} b: ${page} c: ${page} d: ${page.replace('{', '@skip(if: true) {')} }`;
      const result = await graphql(t, pages, undefined, { apiKey });
      expect({ status: result.status, errors: result.body.errors }).toEqual({ status: 200, errors: undefined });
      expect(remainingAfter(result)).toBe(String(BUDGET - 3));
    });

    test('when two operations on one key arrive at once and only one can afford the last units, then only that one runs', async () => {
      // Each pays 1 at the door and 2 more before it runs: after both doors 3 of the 5 units are left, enough for one.
      // Several keys at once, so that the two operations of each overlap.
      const race = async (apiKey: string) => {
        const answers = await Promise.all([1, 2].map(() => graphql(t, lookups(3), undefined, { apiKey })));
        // The refused one spent only its request: 3 + 1 of 5.
        const next = await request(t, 'GET', '/v1/pets', { apiKey });
        return { statuses: answers.map((answer) => answer.status).sort(), next: [next.status, remainingAfter(next)] };
      };
      const keys: string[] = [];
      for (let i = 0; i < 8; i++) keys.push(await freshKey());
      expect(new Set((await Promise.all(keys.map(race))).map((outcome) => JSON.stringify(outcome)))).toEqual(
        new Set([JSON.stringify({ statuses: [200, 429], next: [200, '0'] })]),
      );
    });

    test('when a pet is created, then it spends one request, as POST /v1/pets does', async () => {
      const apiKey = await freshKey();
      const result = await graphql(t, 'mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id name categoryId status } }', undefined, { apiKey });
      expect(result.status).toBe(200);
      expect(remainingAfter(result)).toBe(String(BUDGET - 1));
    });
  });
}
