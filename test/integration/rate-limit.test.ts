import { API_KEY_LOOKUP, countStatements } from '../helpers/statement-counter';
import { ApiKeyService } from '../../src/auth/api-key.service';
import { openDatabase } from '../../src/database/open-database';
import { seedPets } from '../../src/pets/pet.seed';
import { describeGraphqlCharging, expectLimited, lookups } from '../helpers/graphql-charging';
import { graphql, request, startTestApp, type TestApp } from '../helpers/test-app';
import { createTestDatabase, testOnMysql } from '../helpers/test-database';

describe('rate limits per API key and per IP address', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { RATE_LIMIT_MAX: '3', RATE_LIMIT_UNAUTHENTICATED_MAX: '2', RATE_LIMIT_WINDOW_SECONDS: '60' } });
  });
  afterAll(() => t.close());

  test('when a key spends its requests, then the next is 429 with Retry-After, while another key goes on', async () => {
    const first = await request(t, 'GET', '/v1/pets');
    expect(first.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60');
    expect(first.headers.get('ratelimit')).toMatch(/^"default";r=2;t=\d+$/);
    await request(t, 'GET', '/v1/pets');
    expect((await request(t, 'GET', '/v1/pets')).headers.get('ratelimit')).toMatch(/^"default";r=0;/);
    expectLimited(await request(t, 'GET', '/v1/pets'));
    expectLimited(await graphql(t, '{ __typename }'), true);

    const { key } = await t.apiKeys.create('other');
    expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
  });

  test('when requests come without a valid key, then they count per IP address and 429 follows the 401s', async () => {
    expect((await request(t, 'GET', '/v1/pets', { apiKey: 'pst_guess' })).status).toBe(401);
    expect((await request(t, 'GET', '/v1/pets', { apiKey: null })).status).toBe(401);
    expectLimited(await request(t, 'GET', '/v1/pets', { apiKey: 'pst_guess' }));
  });

  test('when the documentation is read, then no limit applies', async () => {
    for (let i = 0; i < 5; i++) expect((await request(t, 'GET', '/v1/openapi.json', { apiKey: null })).status).toBe(200);
  });
});

describeGraphqlCharging('in memory', undefined);

describe('walking the whole list costs the same on both surfaces', () => {
  const PETS = 250;
  const QUOTA = 100;
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { RATE_LIMIT_MAX: String(QUOTA) } });
    await seedPets(t.dataSource, PETS);
  });
  afterAll(() => t.close());

  /** What is left of the key's quota, from the `RateLimit` header: `"default";r=<remaining>;t=<s>`. */
  const remainingOf = (result: { headers: Headers }) => Number(/;r=(\d+);/.exec(result.headers.get('ratelimit') ?? '')?.[1]);

  /** Follows REST `Link` headers in pages of `limit`; returns the pets seen and what the last answer says is left. */
  async function walkRest(apiKey: string, limit: number): Promise<{ pets: number; remaining: number }> {
    let pets = 0;
    let remaining = QUOTA;
    for (let path: string | undefined = `/v1/pets?limit=${limit}`; path !== undefined;) {
      const page = await request(t, 'GET', path, { apiKey });
      expect(page.status).toBe(200);
      pets += page.body.length;
      remaining = remainingOf(page);
      path = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1];
    }
    return { pets, remaining };
  }

  /** Follows `petsConnection`'s `endCursor` in pages of `first`, with a full selection. */
  async function walkGraphql(apiKey: string, first: number): Promise<{ pets: number; remaining: number }> {
    const query = `query Page($first: Int, $after: String) {
      petsConnection(first: $first, after: $after) { edges { cursor node { id name categoryId status } } pageInfo { hasNextPage endCursor } }
    }`;
    let pets = 0;
    let remaining = QUOTA;
    for (let after: string | undefined, more = true; more;) {
      const page = await graphql(t, query, { first, after }, { apiKey });
      expect({ status: page.status, errors: page.body.errors }).toEqual({ status: 200, errors: undefined });
      const { edges, pageInfo } = page.body.data.petsConnection;
      pets += edges.length;
      remaining = remainingOf(page);
      [after, more] = [pageInfo.endCursor, pageInfo.hasNextPage];
    }
    return { pets, remaining };
  }

  test.each([100, 50])(`when ${PETS} pets are walked in pages of %i over REST and over GraphQL, then both spend one unit per page`, async (size) => {
    const rest = await walkRest((await t.apiKeys.create('rest walker')).key, size);
    const gql = await walkGraphql((await t.apiKeys.create('graphql walker')).key, size);
    const pages = Math.ceil(PETS / size);
    expect({ rest, graphql: gql }).toEqual({
      rest: { pets: PETS, remaining: QUOTA - pages },
      graphql: { pets: PETS, remaining: QUOTA - pages },
    });
  });
});

describe('every GraphQL answer tells its price and where the rate limit stands, as its RateLimit header does', () => {
  const QUOTA = 5;
  const ACCEPTS = ['application/json', 'application/graphql-response+json'];
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { RATE_LIMIT_MAX: String(QUOTA), RATE_LIMIT_UNAUTHENTICATED_MAX: '7', RATE_LIMIT_WINDOW_SECONDS: '60' } });
  });
  afterAll(() => t.close());

  const freshKey = async () => (await t.apiKeys.create('priced')).key;
  /** What the `RateLimit-Policy` and `RateLimit` header fields say, in the words of `extensions.rateLimit`. */
  const headerStatus = (result: { headers: Headers }) => {
    const [, quota, windowSeconds] = /^"default";q=(\d+);w=(\d+)$/.exec(result.headers.get('ratelimit-policy') ?? '') ?? [];
    const [, remaining, resetSeconds] = /^"default";r=(\d+);t=(\d+)$/.exec(result.headers.get('ratelimit') ?? '') ?? [];
    return { quota: Number(quota), remaining: Number(remaining), resetSeconds: Number(resetSeconds), windowSeconds: Number(windowSeconds) };
  };
  const status = (remaining: number, quota = QUOTA) => ({ quota, remaining, resetSeconds: expect.any(Number), windowSeconds: 60 });
  const page = 'pets(limit: 100) { id name categoryId status }';

  test.each(ACCEPTS)('when an operation runs (Accept %s), then `extensions` gives its price and what is left', async (accept) => {
    const result = await graphql(t, `{ ${page} }`, undefined, { apiKey: await freshKey(), accept });
    expect(result.status).toBe(200);
    expect(result.body.extensions).toEqual({
      cost: { requestedQueryCost: 400, maximumQueryCost: 1000, rateLimitUnits: 1 },
      rateLimit: status(QUOTA - 1),
    });
    expect(result.body.extensions.rateLimit).toEqual(headerStatus(result));
  });

  test.each(ACCEPTS)('when an operation is over the cost limit (Accept %s), then 400 with its price, and only its request spent', async (accept) => {
    const result = await graphql(t, `{ a: ${page} b: ${page} c: ${page} }`, undefined, { apiKey: await freshKey(), accept });
    expect(result.status).toBe(400);
    expect(result.body.errors[0].message).toBe('Query cost 1,200 exceeds the maximum of 1,000.');
    expect(result.body.extensions).toEqual({
      cost: { requestedQueryCost: 1200, maximumQueryCost: 1000, rateLimitUnits: 3 },
      rateLimit: status(QUOTA - 1),
    });
    expect(result.body.extensions.rateLimit).toEqual(headerStatus(result));
  });

  test.each(ACCEPTS)('when an operation costs more units than are left (Accept %s), then 429 with its price and what is left', async (accept) => {
    const result = await graphql(t, lookups(QUOTA + 1), undefined, { apiKey: await freshKey(), accept });
    expectLimited(result, true);
    expect(result.body.extensions).toEqual({
      cost: { requestedQueryCost: (QUOTA + 1) * 100, maximumQueryCost: 1000, rateLimitUnits: QUOTA + 1 },
      rateLimit: status(QUOTA - 1),
    });
    expect(result.body.extensions.rateLimit).toEqual(headerStatus(result));
  });

  test('when the key has nothing left, then the 429 the guard sends says so too, without a price', async () => {
    const apiKey = await freshKey();
    const spent = await graphql(t, lookups(QUOTA), undefined, { apiKey });
    expect(spent.status).toBe(200);
    expect(spent.body.extensions).toEqual({ cost: { requestedQueryCost: QUOTA * 100, maximumQueryCost: 1000, rateLimitUnits: QUOTA }, rateLimit: status(0) });
    const refused = await graphql(t, `{ ${page} }`, undefined, { apiKey });
    expectLimited(refused, true);
    expect(refused.body.extensions).toEqual({ rateLimit: status(0) });
    expect(refused.body.extensions.rateLimit).toEqual(headerStatus(refused));
  });

  test('when a document does not validate, then the answer tells what is left but no price', async () => {
    const result = await graphql(t, '{ petz { id } }', undefined, { apiKey: await freshKey(), accept: ACCEPTS[1] });
    expect(result.status).toBe(400);
    expect(result.body.extensions).toEqual({ rateLimit: status(QUOTA - 1) });
  });

  test('when the key is unknown, then the 401 tells what is left of its address', async () => {
    const result = await graphql(t, `{ ${page} }`, undefined, { apiKey: null });
    expect(result.status).toBe(401);
    expect(result.body.extensions).toEqual({ rateLimit: status(6, 7) });
    expect(result.body.extensions.rateLimit).toEqual(headerStatus(result));
  });
});

describe("a key's first burst after a start", () => {
  // MySQL only: the key is made by another process (its own Database), so the app has never looked it up.
  testOnMysql(
    'when 300 requests come at once with a valid key the instance has not looked up yet, then they share one lookup and are charged to the key, not its address',
    async () => {
      const { database, drop } = await createTestDatabase();
      const other = await openDatabase(database);
      const t = await startTestApp({ database, env: { RATE_LIMIT_MAX: '1000', RATE_LIMIT_UNAUTHENTICATED_MAX: '20', RATE_LIMIT_WINDOW_SECONDS: '60' } });
      try {
        const { key } = await new ApiKeyService(other).create('deployed elsewhere');
        const statements = countStatements(t.dataSource);
        const answers = await Promise.all(Array.from({ length: 300 }, () => request(t, 'GET', '/v1/pets?limit=1', { apiKey: key })));
        expect(answers.map((answer) => answer.status).filter((status) => status !== 200)).toEqual([]);
        expect(statements.count(API_KEY_LOOKUP)).toBe(1);
        // Charged to the key: 301 of its 1000 spent, this request included.
        expect((await request(t, 'GET', '/v1/pets?limit=1', { apiKey: key })).headers.get('ratelimit')).toMatch(/^"default";r=699;/);
      } finally {
        await t.close();
        await other.close();
        await drop();
      }
    },
  );
});

describe('behind a proxy (TRUST_PROXY)', () => {
  const limits = { RATE_LIMIT_MAX: '5', RATE_LIMIT_UNAUTHENTICATED_MAX: '1' };
  const from = (t: TestApp, client: string) => request(t, 'GET', '/v1/pets', { apiKey: null, headers: { 'x-forwarded-for': client } });

  test('when one hop is trusted, then clients behind the proxy count per forwarded address', async () => {
    const t = await startTestApp({ env: { ...limits, TRUST_PROXY: '1' } });
    try {
      expect((await from(t, '203.0.113.1')).status).toBe(401);
      expect((await from(t, '203.0.113.2')).status).toBe(401);
      expectLimited(await from(t, '203.0.113.1'));
    } finally {
      await t.close();
    }
  });

  test('when no proxy is trusted, then X-Forwarded-For is ignored and cannot buy a fresh allowance', async () => {
    const t = await startTestApp({ env: limits });
    try {
      expect((await from(t, '203.0.113.1')).status).toBe(401);
      expectLimited(await from(t, '203.0.113.2'));
    } finally {
      await t.close();
    }
  });
});
