import fc from 'fast-check';
import { ERROR_CATALOGUE } from '../../src/errors/error-catalogue';
import { countPets, graphql, request, startTestApp, type TestApp } from '../helpers/test-app';
import { WebhookEndpointRepository } from '../../src/webhooks/webhook-endpoint.repository';

/**
 * Property-based tests: generated bad and boundary inputs for every REST and GraphQL operation.
 * Whatever comes in, the answer is never a 5xx, errors have the catalogue's shape, and a
 * refused request stores nothing. Seeded, so a failure replays; FUZZ_RUNS sets the cases per
 * property (default 1,700: over 10,000 in all).
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 1700);
fc.configureGlobal({ seed: 20261122, numRuns: RUNS, endOnFailure: true });
// 1,700 requests per property take about 10 s on a quiet machine and near 30 s (jest's default)
// on a loaded one: a time budget, not a speed check (speed lives in `npm run bench`).
jest.setTimeout(120_000);

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

/** What the properties sent and what came back, counted as the answers arrive (shrinking included). */
const sent = { requests: 0, answered5xx: 0 };
afterAll(() => console.info(`fuzz: ${sent.requests} generated requests, ${sent.answered5xx} answered 5xx`));

function count(result: { status: number }) {
  sent.requests += 1;
  if (result.status >= 500) sent.answered5xx += 1;
}

function expectCatalogued(result: { status: number; body: any }) {
  count(result);
  expect(result.status).toBeLessThan(500);
  if (result.status >= 400) {
    expect(result.body).toEqual({ code: expect.any(String), message: expect.any(String), status: result.status });
    expect(ERROR_CATALOGUE[result.body.code as keyof typeof ERROR_CATALOGUE].status).toBe(result.status);
  }
}

function expectGraphqlCatalogued(result: { status: number; body: any }) {
  count(result);
  expect(result.status).toBeLessThan(500);
  for (const error of result.body.errors ?? []) {
    expect(Object.keys(ERROR_CATALOGUE)).toContain(error.extensions.code);
    expect(error.extensions.code).not.toBe('INTERNAL_SERVER_ERROR');
  }
}

/** Values near every rule's edge, mixed with anything JSON can hold. */
const edgy = fc.oneof(
  fc.constantFrom(0, 1, -1, 1.5, 100, 101, 2 ** 53 - 1, 2 ** 53, -(2 ** 53), 1e308, '', ' ', '7', 'available', 'sold', 'SOLD', null, true, [], {}),
  fc.string({ maxLength: 120 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 2 }),
);
const newPetLike = fc.record({ name: edgy, categoryId: edgy, status: edgy, id: edgy, extra: edgy }, { requiredKeys: [] });

describe('REST under generated input', () => {
  test('when POST /v1/pets gets any JSON, then 201 with a Pet or a catalogued 4xx that stores nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(newPetLike, fc.jsonValue({ maxDepth: 3 })), async (body) => {
        const before = await countPets(t);
        const result = await request(t, 'POST', '/v1/pets', { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
        expectCatalogued(result);
        expect(await countPets(t)).toBe(before + (result.status === 201 ? 1 : 0));
      }),
    );
  });

  test('when POST /v1/pets gets arbitrary bytes, then never a 5xx and nothing is stored', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.constantFrom('application/json', 'text/plain', 'application/json; charset=latin1', ''),
        async (body, type) => {
          const before = await countPets(t);
          const result = await request(t, 'POST', '/v1/pets', { body, headers: type ? { 'content-type': type } : {} });
          expectCatalogued(result);
          expect(await countPets(t)).toBe(before + (result.status === 201 ? 1 : 0));
        },
      ),
    );
  });

  test('when GET /v1/pets gets any query string, then 200 or a catalogued 4xx', async () => {
    const key = fc.oneof(fc.constantFrom('limit', 'status', 'offset', '__proto__', 'constructor'), fc.string({ maxLength: 10 }));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(key, fc.oneof(fc.string({ maxLength: 30 }), edgy.map(String))), { maxLength: 4 }), async (pairs) => {
        const query = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
        expectCatalogued(await request(t, 'GET', `/v1/pets?${query}`));
      }),
    );
  });

  test('when GET /v1/pets/{petId} gets any path segment, then 200, 404 or a catalogued 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), fc.bigInt().map(String), edgy.map(String)), async (petId) => {
        if (petId === '' || petId === '.' || petId === '..') return;
        expectCatalogued(await request(t, 'GET', `/v1/pets/${encodeURIComponent(petId)}`));
      }),
    );
  });

  test('when the Authorization header is anything, then 401 and never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 80 }).map((s) => `Bearer ${s}`),
          fc.string({ maxLength: 80 }),
        ),
        async (authorization) => {
          const header = authorization.replace(/[^\t\x20-\x7e]/g, '');
          const result = await request(t, 'GET', '/v1/pets', { headers: { authorization: header }, apiKey: null });
          expectCatalogued(result);
          expect(result.status).toBe(401);
        },
      ),
    );
  });
});

describe('GraphQL under generated input', () => {
  test('when createPet gets any input variables, then a Pet or catalogued errors, and nothing stored on error', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(newPetLike, fc.jsonValue({ maxDepth: 2 })), async (input) => {
        const before = await countPets(t);
        const result = await graphql(t, 'mutation($input: NewPetInput!) { createPet(input: $input) { id name categoryId status } }', { input });
        expectGraphqlCatalogued(result);
        expect(await countPets(t)).toBe(before + (result.body.data?.createPet ? 1 : 0));
      }),
    );
  });

  test('when pets and pet get any variables, then data or catalogued errors', async () => {
    await fc.assert(
      fc.asyncProperty(edgy, edgy, edgy, async (limit, status, id) => {
        const query = 'query($limit: Int, $status: PetStatus, $id: ID!) { pets(limit: $limit, status: $status) { id } pet(id: $id) { id } }';
        expectGraphqlCatalogued(await graphql(t, query, { limit, status, id }));
      }),
    );
  });
});

describe('the webhook endpoint operations under generated input', () => {
  let admin: string;
  const countEndpoints = async () => (await new WebhookEndpointRepository(t.database).list()).length;
  // IP literals and no host names: no property waits on DNS.
  const urlLike = fc.oneof(
    edgy,
    fc.constantFrom(
      'https://1.1.1.1/hooks',
      'http://1.1.1.1/hooks',
      'https://127.0.0.1/x',
      'https://[::ffff:10.0.0.1]/',
      'https://u:p@1.1.1.1/',
      `https://1.1.1.1/${'x'.repeat(2100)}`,
    ),
  );
  const endpointLike = fc.record({ url: urlLike, status: edgy, description: edgy, enabled: edgy, secret: edgy }, { requiredKeys: [] });
  beforeAll(async () => {
    admin = (await t.apiKeys.create({ name: 'fuzz hooks', scopes: ['webhooks:admin'] })).key;
  });

  test('when POST /v1/admin/webhook-endpoints gets any JSON, then 201 or a catalogued 4xx that stores nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(endpointLike, fc.jsonValue({ maxDepth: 3 })), async (body) => {
        const before = await countEndpoints();
        const result = await request(t, 'POST', '/v1/admin/webhook-endpoints', {
          apiKey: admin,
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        });
        expectCatalogued(result);
        expect(await countEndpoints()).toBe(before + (result.status === 201 ? 1 : 0));
      }),
      { numRuns: Math.ceil(RUNS / 4) },
    );
  });

  test('when PATCH /v1/admin/webhook-endpoints/{id} gets any JSON, then 200 or a catalogued 4xx, and a 4xx changes nothing', async () => {
    const created = await request(t, 'POST', '/v1/admin/webhook-endpoints', { apiKey: admin, body: { url: 'https://1.1.1.1/patched' } });
    const path = `/v1/admin/webhook-endpoints/${created.body.id}`;
    await fc.assert(
      fc.asyncProperty(fc.oneof(endpointLike, fc.jsonValue({ maxDepth: 3 })), async (body) => {
        const before = (await request(t, 'GET', path, { apiKey: admin })).body;
        const result = await request(t, 'PATCH', path, { apiKey: admin, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
        expectCatalogued(result);
        if (result.status >= 400) expect((await request(t, 'GET', path, { apiKey: admin })).body).toEqual(before);
      }),
      { numRuns: Math.ceil(RUNS / 4) },
    );
  });
});
