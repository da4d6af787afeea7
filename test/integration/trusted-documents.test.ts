import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from 'graphql-ws';
import { sha256Hex } from '../../src/graphql/trusted-documents';
import { connectWithKey, subscribe } from '../helpers/subscription-client';
import { type TestApp, countPets, createPet, request, settleFeed, startTestApp } from '../helpers/test-app';

/**
 * Trusted documents (docs/api-keys.md "Trusted documents") on the real app: manifests of both formats named by
 * TRUSTED_DOCUMENTS, a publishable key running them by id over HTTP (POST and GET) and WebSocket, and everything else
 * refused before Apollo runs.
 */

const PETS = 'query Pets { pets { id name } }';
const CREATE_PET = 'mutation CreatePet($name: String!) { createPet(input: { name: $name, categoryId: 1 }) { id } }';
const OVER_COST = `query OverCost { ${[0, 1, 2].map((i) => `l${i}: pets(limit: 100) { id name categoryId status }`).join(' ')} }`;
const PET_CREATED = 'subscription PetCreated { petCreated { id name } }';
/** In no manifest. */
const INLINE_PETS = '{ pets { id } }';
const INLINE_CREATE = 'mutation { createPet(input: { name: "Inline", categoryId: 1 }) { id } }';

const id = (document: string) => `sha256:${sha256Hex(document)}`;
const apq = (document: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256Hex(document) } });
const errorCode = (body: any) => body?.errors?.[0]?.extensions?.code;

/** A GET on /graphql with these parameters (objects as JSON). */
function getPath(params: Record<string, unknown>): string {
  const search = new URLSearchParams(
    Object.entries(params).map(([name, value]): [string, string] => [name, typeof value === 'string' ? value : JSON.stringify(value)]),
  );
  return `/graphql?${search}`;
}

describe('trusted documents', () => {
  let t: TestApp;
  let publishable: string;
  const clients: Client[] = [];
  beforeAll(async () => {
    const folder = await mkdtemp(path.join(tmpdir(), 'trusted-documents-'));
    // graphql-codegen's format and Apollo's, both named.
    const codegen = path.join(folder, 'persisted-documents.json');
    await writeFile(codegen, JSON.stringify({ [sha256Hex(PETS)]: PETS, [sha256Hex(CREATE_PET)]: CREATE_PET, [sha256Hex(OVER_COST)]: OVER_COST }));
    const apollo = path.join(folder, 'persisted-query-manifest.json');
    await writeFile(
      apollo,
      JSON.stringify({
        format: 'apollo-persisted-query-manifest',
        version: 1,
        operations: [{ id: sha256Hex(PET_CREATED), name: 'PetCreated', type: 'subscription', body: PET_CREATED }],
      }),
    );
    t = await startTestApp({ env: { TRUSTED_DOCUMENTS: `${codegen},${apollo}` } });
    publishable = (await t.apiKeys.create({ name: 'web', kind: 'publishable' })).key;
    await createPet(t, { name: 'Seeded' });
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
  });
  afterAll(() => t.close());

  const post = (body: unknown, apiKey = publishable, headers?: Record<string, string>) => request(t, 'POST', '/graphql', { body, apiKey, headers });
  const get = (params: Record<string, unknown>, apiKey = publishable) => request(t, 'GET', getPath(params), { apiKey });

  describe('a publishable key', () => {
    test('when it sends a documentId by POST, then the trusted document runs', async () => {
      const result = await post({ documentId: id(PETS) });
      expect(result.status).toBe(200);
      expect(result.body.data.pets).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'Seeded' })]));
    });

    test('when it sends a documentId by GET, then the trusted document runs', async () => {
      const result = await get({ documentId: id(PETS) });
      expect(result.status).toBe(200);
      expect(result.body.data.pets).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'Seeded' })]));
    });

    test("when it sends Apollo's persisted query hash without a query, by POST or GET, then the trusted document runs", async () => {
      for (const result of [await post({ extensions: apq(PETS) }), await get({ extensions: apq(PETS) })]) {
        expect(result.status).toBe(200);
        expect(result.body.data.pets.length).toBeGreaterThan(0);
      }
    });

    test.each([
      ['POST', { query: INLINE_PETS }],
      ['POST with its persisted query hash', { query: INLINE_PETS, extensions: apq(INLINE_PETS) }],
      ['POST of a trusted document inline', { query: PETS }],
      ['POST beside a documentId', { query: INLINE_PETS, documentId: id(PETS) }],
      ['POST of nothing', {}],
    ])('when it sends a document inline (%s), then 400 PERSISTED_QUERY_ID_REQUIRED', async (_form, body) => {
      const result = await post(body);
      expect(result.status).toBe(400);
      expect(errorCode(result.body)).toBe('PERSISTED_QUERY_ID_REQUIRED');
      expect(result.body.data).toBeUndefined();
    });

    test('when it sends a document inline by GET, or with Accept: application/json, then 400 PERSISTED_QUERY_ID_REQUIRED too', async () => {
      for (const result of [
        await get({ query: INLINE_PETS }),
        await get({ query: INLINE_PETS, extensions: apq(INLINE_PETS) }),
        await post({ query: INLINE_PETS }, publishable, { accept: 'application/json' }),
      ]) {
        expect(result.status).toBe(400);
        expect(errorCode(result.body)).toBe('PERSISTED_QUERY_ID_REQUIRED');
      }
    });

    test('when it sends a mutation inline, then nothing runs: no pet is created', async () => {
      const before = await countPets(t);
      const result = await post({ query: INLINE_CREATE });
      expect(result.status).toBe(400);
      expect(errorCode(result.body)).toBe('PERSISTED_QUERY_ID_REQUIRED');
      expect(await countPets(t)).toBe(before);
    });

    test.each([
      ['a documentId by POST', () => post({ documentId: id(INLINE_PETS) })],
      ['a documentId by GET', () => get({ documentId: id(INLINE_PETS) })],
      ['a malformed documentId', () => post({ documentId: 'md5:abc' })],
      ['a persisted query hash by POST', () => post({ extensions: apq(INLINE_PETS) })],
      ['a persisted query hash by GET', () => get({ extensions: apq(INLINE_PETS) })],
    ])('when it sends an id no manifest holds (%s), then 400 PERSISTED_QUERY_NOT_IN_LIST', async (_form, send) => {
      const result = await send();
      expect(result.status).toBe(400);
      expect(errorCode(result.body)).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    });

    test('when it is refused, then only the request’s one rate-limit unit is charged', async () => {
      const remaining = (result: { headers: Headers }) => Number(/r=(\d+)/.exec(result.headers.get('ratelimit') ?? '')![1]);
      const first = await post({ query: OVER_COST });
      const second = await post({ documentId: id(INLINE_PETS) });
      expect(remaining(first) - remaining(second)).toBe(1);
    });

    test('when it runs a trusted mutation, then its scopes still apply: 403 FORBIDDEN, nothing created', async () => {
      const before = await countPets(t);
      const result = await post({ documentId: id(CREATE_PET), variables: { name: 'Trusted' } });
      expect(result.status).toBe(403);
      expect(errorCode(result.body)).toBe('FORBIDDEN');
      expect(await countPets(t)).toBe(before);
    });

    test('when it runs a trusted document over the cost limit, then the cost limit still refuses it', async () => {
      const result = await post({ documentId: id(OVER_COST) });
      expect(result.status).toBe(400);
      expect(errorCode(result.body)).toBe('GRAPHQL_VALIDATION_FAILED');
      expect(result.body.extensions.cost.requestedQueryCost).toBeGreaterThan(result.body.extensions.cost.maximumQueryCost);
    });
  });

  describe("automatic persisted queries' cache", () => {
    test('when a publishable key sends an unknown hash, then nothing is cached: a secret key sending it alone gets PERSISTED_QUERY_NOT_FOUND', async () => {
      const document = '{ pets { name } }';
      expect(errorCode((await post({ extensions: apq(document) })).body)).toBe('PERSISTED_QUERY_NOT_IN_LIST');
      expect(errorCode((await post({ query: document, extensions: apq(document) })).body)).toBe('PERSISTED_QUERY_ID_REQUIRED');
      const secret = await post({ extensions: apq(document) }, t.apiKey);
      expect(errorCode(secret.body)).toBe('PERSISTED_QUERY_NOT_FOUND');
      // Then a publishable key still cannot run it, whatever a secret key registers.
      expect((await post({ query: document, extensions: apq(document) }, t.apiKey)).status).toBe(200);
      expect(errorCode((await post({ extensions: apq(document) })).body)).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    });

    test('when a secret key sends a hash alone, then automatic persisted queries work as before', async () => {
      const document = '{ pets { categoryId } }';
      expect(errorCode((await post({ extensions: apq(document) }, t.apiKey)).body)).toBe('PERSISTED_QUERY_NOT_FOUND');
      expect((await post({ query: document, extensions: apq(document) }, t.apiKey)).status).toBe(200);
      const cached = await post({ extensions: apq(document) }, t.apiKey);
      expect(cached.status).toBe(200);
      expect(cached.body.data.pets.length).toBeGreaterThan(0);
    });
  });

  describe('a secret key', () => {
    test('when it sends a document inline, then it runs as before', async () => {
      const result = await post({ query: INLINE_PETS }, t.apiKey);
      expect(result.status).toBe(200);
      expect(result.body.data.pets.length).toBeGreaterThan(0);
    });

    test('when it sends a documentId, by POST or GET, then the trusted document runs; a mutation too', async () => {
      expect((await post({ documentId: id(PETS) }, t.apiKey)).body.data.pets.length).toBeGreaterThan(0);
      expect((await get({ documentId: id(PETS) }, t.apiKey)).body.data.pets.length).toBeGreaterThan(0);
      const created = await post({ documentId: id(CREATE_PET), variables: { name: 'By id' } }, t.apiKey);
      expect(created.status).toBe(200);
      expect(created.body.data.createPet.id).toMatch(/^\d+$/);
    });

    test('when it sends an unknown documentId, then 400 PERSISTED_QUERY_NOT_IN_LIST', async () => {
      const result = await post({ documentId: id(INLINE_PETS) }, t.apiKey);
      expect(result.status).toBe(400);
      expect(errorCode(result.body)).toBe('PERSISTED_QUERY_NOT_IN_LIST');
    });
  });

  describe('over the WebSocket, a publishable key', () => {
    async function client(): Promise<Client> {
      const { client } = await connectWithKey(t, publishable);
      clients.push(client);
      return client;
    }

    test('when it subscribes by documentId, then it receives the events', async () => {
      await settleFeed(t);
      const c = await client();
      // graphql-ws's client requires a string query: empty, the id names the document.
      const events = subscribe(c, { query: '', documentId: id(PET_CREATED) });
      const deadline = Date.now() + 10_000;
      let pets: unknown[] = [];
      // No acknowledgement of a subscribe: create pets until one arrives.
      const arrived = events.pets(1).then((received) => (pets = received));
      while (pets.length === 0 && Date.now() < deadline) {
        await createPet(t, { name: 'Announced' });
        await Promise.race([arrived, new Promise((resolve) => setTimeout(resolve, 100))]);
      }
      expect(pets[0]).toEqual(expect.objectContaining({ name: 'Announced' }));
    });

    test("when it subscribes by Apollo's persisted query hash, then it receives the events", async () => {
      await settleFeed(t);
      const c = await client();
      const events = subscribe(c, { query: '', extensions: apq(PET_CREATED) });
      await new Promise((resolve) => setTimeout(resolve, 100));
      await createPet(t, { name: 'Hashed' });
      expect((await events.pets(1))[0]).toEqual(expect.objectContaining({ name: 'Hashed' }));
    });

    test('when it subscribes with a document inline, then an error PERSISTED_QUERY_ID_REQUIRED, and nothing runs', async () => {
      const c = await client();
      const events = subscribe(c, PET_CREATED);
      const errors = await events.error();
      expect(errors.map((error) => error.extensions?.code)).toEqual(['PERSISTED_QUERY_ID_REQUIRED']);
      expect(events.results).toEqual([]);
    });

    test('when it subscribes with an unknown id, then an error PERSISTED_QUERY_NOT_IN_LIST', async () => {
      const c = await client();
      const errors = await subscribe(c, { query: '', documentId: id('subscription { petCreated { id } }') }).error();
      expect(errors.map((error) => error.extensions?.code)).toEqual(['PERSISTED_QUERY_NOT_IN_LIST']);
    });
  });
});
