import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { type Metrics, createMetrics } from '../../src/observability/metrics.registry';
import { type Closed, connectWithKey, subscribe, untilActive } from '../helpers/subscription-client';
import { type HttpResult, countPets, createPet, graphql, request, settleFeed, startTestApp, type TestApp } from '../helpers/test-app';

/**
 * Scopes and origins of API keys (docs/api-keys.md "Kinds and scopes", "Origins") on every surface: REST, GraphQL over
 * HTTP and the WebSocket, against the real app on a real database.
 */

const NEW_PET = { name: 'Rex', categoryId: 1 };
const CREATE_PET = 'mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id name } }';
const GRAPHQL_RESPONSE = 'application/graphql-response+json';

/** The `r` (remaining) of an answer's RateLimit header. */
function remaining(result: HttpResult): number {
  const match = /;r=(\d+);/.exec(result.headers.get('ratelimit') ?? '');
  if (!match) throw new Error(`no RateLimit header: ${result.headers.get('ratelimit')}`);
  return Number(match[1]);
}

/** Expects the REST refusal of an operation for want of `scope`. */
function expectInsufficientScope(result: HttpResult, scope: string) {
  expect(result.status).toBe(403);
  expect(result.body).toEqual({ code: 'FORBIDDEN', message: `This API key lacks the ${scope} scope this operation needs.`, status: 403 });
  expect(result.headers.get('www-authenticate')).toBe(`Bearer realm="pet-store", error="insufficient_scope", scope="${scope}"`);
}

/** Expects GraphQL's refusal, before execution, for want of `scope`: no `data`, one FORBIDDEN error. */
function expectGraphqlForbidden(result: HttpResult, scope: string, contentType = GRAPHQL_RESPONSE) {
  expect(result.status).toBe(403);
  expect(result.headers.get('content-type')).toContain(contentType);
  expect(result.headers.get('www-authenticate')).toBe(`Bearer realm="pet-store", error="insufficient_scope", scope="${scope}"`);
  expect(result.body.data).toBeUndefined();
  expect(result.body.errors).toEqual([expect.objectContaining({ message: `This API key lacks the ${scope} scope this operation needs.` })]);
  expect(result.body.errors[0].extensions.code).toBe('FORBIDDEN');
}

describe('scopes', () => {
  let t: TestApp;
  let metrics: Metrics;
  let readKey: string;
  let publishableKey: string;
  let writeOnlyKey: string;
  beforeAll(async () => {
    metrics = createMetrics();
    t = await startTestApp({ observe: { metrics } });
    readKey = (await t.apiKeys.create({ name: 'reader', scopes: ['pets:read'], rateLimit: 1000 })).key;
    publishableKey = (await t.apiKeys.create({ name: 'browser', kind: 'publishable', rateLimit: 1000 })).key;
    writeOnlyKey = (await t.apiKeys.create({ name: 'writer', scopes: ['pets:write'] })).key;
  });
  afterAll(() => t.close());

  describe.each([
    ['a read-only secret key', () => readKey],
    ['a publishable key', () => publishableKey],
  ])('REST with %s', (_kind, keyOf) => {
    test('when it creates a pet, then 403 insufficient_scope in the Error shape, nothing stored, and one rate-limit unit charged', async () => {
      const pets = await countPets(t);
      const before = await request(t, 'GET', '/v1/pets', { apiKey: keyOf() });
      expect(before.status).toBe(200);

      const refused = await request(t, 'POST', '/v1/pets', { apiKey: keyOf(), body: NEW_PET });
      expectInsufficientScope(refused, 'pets:write');
      expect(remaining(refused)).toBe(remaining(before) - 1);
      expect(await countPets(t)).toBe(pets);

      const after = await request(t, 'GET', '/v1/pets', { apiKey: keyOf() });
      expect(remaining(after)).toBe(remaining(before) - 2);
    });

    test('when it lists pets or reads one, then 200', async () => {
      const pet = await createPet(t);
      expect((await request(t, 'GET', '/v1/pets', { apiKey: keyOf() })).status).toBe(200);
      const one = await request(t, 'GET', `/v1/pets/${pet.id}`, { apiKey: keyOf() });
      expect(one.status).toBe(200);
      expect(one.body).toEqual(pet);
    });

    test('when it sends an Idempotency-Key with a create, then it is still 403 and nothing is stored', async () => {
      const pets = await countPets(t);
      const idempotencyKey = randomUUID();
      const refused = await request(t, 'POST', '/v1/pets', { apiKey: keyOf(), body: NEW_PET, headers: { 'idempotency-key': idempotencyKey } });
      expectInsufficientScope(refused, 'pets:write');
      expect(await countPets(t)).toBe(pets);
      // The key was not spent on the refused request: a key with the scope may use it.
      const created = await request(t, 'POST', '/v1/pets', { body: NEW_PET, headers: { 'idempotency-key': idempotencyKey } });
      expect(created.status).toBe(201);
      expect(created.headers.get('idempotent-replayed')).toBe('false');
    });
  });

  test('when a write-only key lists pets, then 403 insufficient_scope naming pets:read; its create works', async () => {
    expectInsufficientScope(await request(t, 'GET', '/v1/pets', { apiKey: writeOnlyKey }), 'pets:read');
    expect((await request(t, 'POST', '/v1/pets', { apiKey: writeOnlyKey, body: NEW_PET })).status).toBe(201);
  });

  describe('GraphQL over HTTP with a read-only key', () => {
    const asReader = (query: string, variables?: Record<string, unknown>, accept = GRAPHQL_RESPONSE) =>
      graphql(t, query, variables, { apiKey: readKey, accept });

    test('when it runs createPet, then 403 FORBIDDEN in application/graphql-response+json and nothing is created', async () => {
      const pets = await countPets(t);
      expectGraphqlForbidden(await asReader(CREATE_PET), 'pets:write');
      expect(await countPets(t)).toBe(pets);
    });

    test('when it runs createPet in legacy application/json, then the same 403 as other refusals before execution', async () => {
      const pets = await countPets(t);
      expectGraphqlForbidden(await asReader(CREATE_PET, undefined, 'application/json'), 'pets:write', 'application/json');
      // No Accept (fetch sends */*): the legacy format too.
      const bare = await graphql(t, CREATE_PET, undefined, { apiKey: readKey });
      expect(bare.status).toBe(403);
      expect(bare.body.errors[0].extensions.code).toBe('FORBIDDEN');
      expect(await countPets(t)).toBe(pets);
    });

    test.each([
      ['an alias', 'mutation { a: createPet(input: { name: "Rex", categoryId: 1 }) { id } }', {}],
      ['a named fragment on Mutation', 'mutation { ...M } fragment M on Mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } }', {}],
      ['an inline fragment', 'mutation { ... on Mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } } }', {}],
      [
        '@include(if: $v) with v true',
        'mutation ($v: Boolean!) { createPet(input: { name: "Rex", categoryId: 1 }) @include(if: $v) { id } __typename }',
        { v: true },
      ],
      [
        '@skip(if: $v) with v false',
        'mutation ($v: Boolean!) { createPet(input: { name: "Rex", categoryId: 1 }) @skip(if: $v) { id } __typename }',
        { v: false },
      ],
      ['__typename beside it', 'mutation { __typename createPet(input: { name: "Rex", categoryId: 1 }) { id } }', {}],
    ])('when createPet hides behind %s, then it is still 403 and nothing is created', async (_how, query, variables) => {
      const pets = await countPets(t);
      expectGraphqlForbidden(await asReader(query, variables), 'pets:write');
      expect(await countPets(t)).toBe(pets);
    });

    test.each([
      ['@skip(if: true)', 'mutation { createPet(input: { name: "Rex", categoryId: 1 }) @skip(if: true) { id } __typename }', {}],
      [
        '@include(if: $v) with v false',
        'mutation ($v: Boolean!) { createPet(input: { name: "Rex", categoryId: 1 }) @include(if: $v) { id } __typename }',
        { v: false },
      ],
    ])('when createPet is left out by %s, then the rest runs and nothing is created', async (_how, query, variables) => {
      const pets = await countPets(t);
      const result = await asReader(query, variables);
      expect(result.status).toBe(200);
      expect(result.body.errors).toBeUndefined();
      expect(result.body.data).toEqual({ __typename: 'Mutation' });
      expect(await countPets(t)).toBe(pets);
    });

    test('when one document is sent with @include(if: $v) false, true, then false again, then each answer follows its own variables', async () => {
      const query = 'mutation Conditional($v: Boolean!) { __typename createPet(input: { name: "Rex", categoryId: 1 }) @include(if: $v) { id } }';
      const pets = await countPets(t);
      expect((await asReader(query, { v: false })).status).toBe(200);
      expectGraphqlForbidden(await asReader(query, { v: true }), 'pets:write');
      expect((await asReader(query, { v: false })).body.data).toEqual({ __typename: 'Mutation' });
      expect(await countPets(t)).toBe(pets);
    });

    test('when a document holds a pets query and a createPet mutation, then the query runs and the mutation is refused', async () => {
      const document = 'query Q { pets { id } } mutation M { createPet(input: { name: "Rex", categoryId: 1 }) { id } }';
      const send = (operationName: string) =>
        request(t, 'POST', '/graphql', { apiKey: readKey, body: { query: document, operationName }, headers: { accept: GRAPHQL_RESPONSE } });
      const query = await send('Q');
      expect(query.status).toBe(200);
      expect(query.body.data.pets).toEqual(expect.any(Array));
      const pets = await countPets(t);
      expectGraphqlForbidden(await send('M'), 'pets:write');
      expect(await countPets(t)).toBe(pets);
    });

    test('when it reads pets, a pet or a node, then they run', async () => {
      const pet = await createPet(t);
      const result = await asReader('query ($id: ID!) { pets(limit: 1) { id } pet(id: $id) { id } node(id: $id) { id } }', { id: String(pet.id) });
      expect(result.status).toBe(200);
      expect(result.body.errors).toBeUndefined();
      expect(result.body.data.pet).toEqual({ id: String(pet.id) });
    });
  });

  describe('GraphQL over HTTP with a write-only key', () => {
    test('when it reads pets, then 403 naming pets:read; a query of __typename alone needs no scope', async () => {
      expectGraphqlForbidden(await graphql(t, '{ pets { id } }', undefined, { apiKey: writeOnlyKey, accept: GRAPHQL_RESPONSE }), 'pets:read');
      const meta = await graphql(t, '{ __typename }', undefined, { apiKey: writeOnlyKey, accept: GRAPHQL_RESPONSE });
      expect(meta.status).toBe(200);
      expect(meta.body.data).toEqual({ __typename: 'Query' });
    });

    test('when it creates a pet, then it is created', async () => {
      const result = await graphql(t, CREATE_PET, undefined, { apiKey: writeOnlyKey, accept: GRAPHQL_RESPONSE });
      expect(result.status).toBe(200);
      expect(result.body.data.createPet.name).toBe('Rex');
    });
  });

  describe('over the WebSocket', () => {
    test('when a read-only key subscribes to petCreated, then it receives new pets', async () => {
      await settleFeed(t);
      const { client } = await connectWithKey({ url: t.url, apiKey: readKey });
      try {
        const active = await metricValueOrZero();
        const subscription = subscribe(client, 'subscription { petCreated { id name } }');
        await untilActive(metrics, active + 1);
        const pet = await createPet(t, { name: 'Watched' });
        expect(await subscription.pets(1)).toEqual([{ id: String(pet.id), name: 'Watched' }]);
        subscription.unsubscribe();
      } finally {
        await client.dispose();
      }
    });

    test('when a write-only key subscribes, then the subscribe gets an error message with FORBIDDEN', async () => {
      const { client } = await connectWithKey({ url: t.url, apiKey: writeOnlyKey });
      try {
        const errors = await subscribe(client, 'subscription { petCreated { id } }').error();
        expect(errors).toEqual([expect.objectContaining({ message: 'This API key lacks the pets:read scope this operation needs.' })]);
        expect(errors[0].extensions?.code).toBe('FORBIDDEN');
      } finally {
        await client.dispose();
      }
    });

    async function metricValueOrZero(): Promise<number> {
      const metric = metrics.registry.getSingleMetric('petstore_subscriptions_active');
      return metric ? (await metric.get()).values.reduce((sum, { value }) => sum + value, 0) : 0;
    }
  });
});

describe('origins of a publishable key', () => {
  const SHOP = 'https://shop.example.com';
  const EVIL = 'https://evil.example';
  let t: TestApp;
  let key: string;
  beforeAll(async () => {
    // CORS would grant both origins: the key's own list is what refuses the second.
    t = await startTestApp({ env: { CORS_ORIGINS: `${SHOP},${EVIL}` } });
    key = (await t.apiKeys.create({ name: 'shop', kind: 'publishable', origins: [SHOP] })).key;
  });
  afterAll(() => t.close());

  test('when a browser on an allowed origin calls, then 200 with the CORS grant', async () => {
    const result = await request(t, 'GET', '/v1/pets', { apiKey: key, headers: { origin: SHOP } });
    expect(result.status).toBe(200);
    expect(result.headers.get('access-control-allow-origin')).toBe(SHOP);
  });

  test('when a browser on another origin calls, then 403 FORBIDDEN and no CORS grant, although CORS_ORIGINS lists it', async () => {
    const result = await request(t, 'GET', '/v1/pets', { apiKey: key, headers: { origin: EVIL } });
    expect(result.status).toBe(403);
    expect(result.body).toEqual({ code: 'FORBIDDEN', message: `This API key may not be used from the origin "${EVIL}".`, status: 403 });
    expect(result.headers.get('access-control-allow-origin')).toBeNull();
    expect(result.headers.get('access-control-expose-headers')).toBeNull();
    // The app's own key has no origin list: CORS_ORIGINS does grant that origin.
    const unrestricted = await request(t, 'GET', '/v1/pets', { headers: { origin: EVIL } });
    expect(unrestricted.status).toBe(200);
    expect(unrestricted.headers.get('access-control-allow-origin')).toBe(EVIL);
  });

  test('when GraphQL is called from another origin, then 403 FORBIDDEN and no CORS grant', async () => {
    const result = await request(t, 'POST', '/graphql', {
      apiKey: key,
      body: { query: '{ pets { id } }' },
      headers: { origin: EVIL, accept: GRAPHQL_RESPONSE },
    });
    expect(result.status).toBe(403);
    expect(result.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('when a script calls without Origin, then 200: an origin check bounds browsers, not scripts', async () => {
    expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
  });

  /** A `ws` WebSocket that sends `origin` in its handshake, as a browser on that page would. */
  const fromOrigin = (origin: string) =>
    class extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { origin });
      }
    };

  /** Connects with the key from `origin`; resolves with the close, or 'connected'. */
  async function connectFrom(origin: string): Promise<Closed | 'connected'> {
    const { createClient } = await import('graphql-ws');
    return new Promise((resolve) => {
      const client = createClient({
        url: `${t.url.replace(/^http/, 'ws')}/graphql`,
        webSocketImpl: fromOrigin(origin),
        connectionParams: { Authorization: `Bearer ${key}` },
        lazy: false,
        retryAttempts: 0,
        onNonLazyError: () => undefined,
        on: {
          connected: () => {
            resolve('connected');
            void client.dispose();
          },
          closed: (event) => resolve({ code: (event as { code: number }).code, reason: String((event as { reason: unknown }).reason) }),
        },
      });
    });
  }

  test('when a WebSocket opens from another origin, then it is closed with 4403; from the allowed one it is acknowledged', async () => {
    expect(await connectFrom(EVIL)).toEqual({ code: 4403, reason: expect.any(String) });
    expect(await connectFrom(SHOP)).toBe('connected');
    // Without Origin (a script), the key is accepted.
    const { client } = await connectWithKey({ url: t.url, apiKey: key });
    await client.dispose();
  });
});
