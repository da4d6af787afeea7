import { createHash } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type DocumentNode, GraphQLObjectType, GraphQLSchema, GraphQLString, Kind, type OperationDefinitionNode, getIntrospectionQuery, parse } from 'graphql';
import { compileQuery } from 'graphql-jit';
import type { GatewayExecutor, GatewayGraphQLRequestContext } from '@apollo/server-gateway-interface';
import { compiledOperationBytes, documentBytes } from '../../src/graphql/document-cache';
import { jitExecutorGateway } from '../../src/graphql/jit-executor.gateway';
import { buildPetStoreSchema } from '../../src/graphql/schema';
import * as httpRules from '../../src/graphql/subscriptions-over-http.rule';
import { answerOf, type TestApp, graphql, request, startTestApp } from '../helpers/test-app';
import { DOCUMENT_CACHE_LIMITS } from '../../src/limits';

/**
 * The caches keyed by GraphQL document are bounded in bytes (docs/security.md "Limits"): what each entry
 * is reckoned to keep, checked against V8's heap, and each cache forgetting its oldest entries
 * once distinct documents pass its budget. test/system/graphql-memory.test.ts floods a capped server.
 */

setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

/** The heap's size once full collections free nothing more (V8 ages some of its caches over several). */
function settledHeap(): number {
  let last = Infinity;
  for (let i = 0; i < 20; i++) {
    collect();
    const used = process.memoryUsage().heapUsed;
    if (Math.abs(last - used) < 64 * 1024) return used;
    last = used;
  }
  return last;
}

/**
 * Heap bytes that `make` keeps alive per call, over `count` calls: the smaller of two
 * measurements, as anything else the process allocates meanwhile can only add to one.
 */
function retainedPerCall(count: number, make: (i: number) => unknown): number {
  const measure = () => {
    const before = settledHeap();
    const kept = Array.from({ length: count }, (_, i) => make(i));
    const after = settledHeap();
    expect(kept).toHaveLength(count);
    return (after - before) / count;
  };
  return Math.min(measure(), measure());
}

/** A distinct document of about `kib` KiB: a one-field query behind a comment. */
const commented = (i: number, kib = 50, filler = 'x') => `#${filler.repeat(kib * 1024)}\nquery D${i} { __typename }`;

/** The one operation of `document`. */
const operationOf = (document: DocumentNode) => document.definitions.find((d) => d.kind === Kind.OPERATION_DEFINITION) as OperationDefinitionNode;

const fields = (n: number, selection: (k: number) => string) => Array.from({ length: n }, (_, k) => selection(k)).join(' ');

describe('what a cached document weighs', () => {
  test.each([
    ['a 50 KiB comment', (i: number) => commented(i)],
    ['a 50 KiB comment of two-byte characters', (i: number) => commented(i, 25, '€')],
    ['30,000 comment lines (a token each)', (i: number) => `${'#\n'.repeat(30_000)}query D${i} { __typename }`],
    ['a pets query', (i: number) => `query D${i}($l: Int) { pets(limit: $l, status: available) { id name categoryId status } p: pet(id: "${i}") { id name } }`],
    ['950 fields', (i: number) => `query D${i} { pets(limit: 1) { ${'id '.repeat(950)}} }`],
    ["GraphiQL's introspection query", (i: number) => getIntrospectionQuery().replace('query IntrospectionQuery', `query D${i}`)],
  ])('when documents with %s are parsed, then documentBytes is at least what the heap keeps for each, and under twice that', (name, text) => {
    const retained = retainedPerCall(200, (i) => parse(text(i)));
    const reckoned = documentBytes(parse(text(0)));
    console.info(`parsed ${name}: ${Math.round(retained)} bytes kept, ${reckoned} reckoned`);
    expect(reckoned).toBeGreaterThanOrEqual(retained);
    expect(reckoned).toBeLessThan(2 * retained);
  });

  test.each([
    ['a pets query', (i: number) => `query D${i} { p${i}: pets(limit: 5, status: available) { id name categoryId status } q: pet(id: "${i}") { id name } }`],
    ['15 aliased lists', (i: number) => `query D${i} { ${fields(15, (k) => `a${k}x${i}: pets(limit: 1) { id name categoryId status }`)} }`],
    ['950 fields', (i: number) => `query D${i} { p${i}: pets(limit: 1) { ${'id '.repeat(950)}} }`],
    ['a fragment of 15 aliases', (i: number) => `query D${i} { a${i}: pets(limit: 1) { ...F } } fragment F on Pet { ${fields(15, (k) => `n${k}: name`)} }`],
    ["GraphiQL's introspection query", (i: number) => getIntrospectionQuery().replace('query IntrospectionQuery {', `query D${i} { a${i}: __typename`)],
  ])(
    'when operations with %s are compiled by graphql-jit, each with code of its own, then compiledOperationBytes is at least what the heap keeps for document and code, and under three times that',
    async (name, text) => {
      const schema = await buildPetStoreSchema();
      const retained = retainedPerCall(40, (i) => {
        const document = parse(text(i));
        return { document, compiled: compileQuery(schema, document) };
      });
      const document = parse(text(0));
      const reckoned = compiledOperationBytes(document, operationOf(document));
      console.info(`compiled ${name}: ${Math.round(retained)} bytes kept, ${reckoned} reckoned`);
      expect(reckoned).toBeGreaterThanOrEqual(retained);
      expect(reckoned).toBeLessThan(3 * retained);
    },
  );
});

describe("Apollo's caches of the app", () => {
  let t: TestApp;
  afterEach(async () => {
    await t?.close();
  });

  test('when distinct documents pass the document store budget, then the first is parsed and validated again; a few do not push it out', async () => {
    const validations = jest.spyOn(httpRules, 'refuseSubscriptionsOverHttp');
    try {
      t = await startTestApp();
      const first = '{ pets(limit: 2) { id } }';
      await graphql(t, first);
      for (let i = 0; i < 20; i++) expect(answerOf((await graphql(t, commented(i))).body)).toEqual({ data: { __typename: 'Query' } });
      validations.mockClear();
      await graphql(t, first);
      expect(validations).not.toHaveBeenCalled();
      // 200 documents of 50 KiB: 10 MiB of source text, past the 8 MiB budget (Apollo's default store kept them all).
      const count = Math.ceil((1.25 * DOCUMENT_CACHE_LIMITS.documentStoreBytes) / (50 * 1024));
      for (let i = 20; i < count; i++) await graphql(t, commented(i));
      validations.mockClear();
      expect(answerOf((await graphql(t, first)).body)).toEqual({ data: { pets: [] } });
      expect(validations).toHaveBeenCalledTimes(1);
    } finally {
      validations.mockRestore();
    }
  });

  /** A request registering `query` as an automatic persisted query, or (`hashOnly`) asking for it by its hash alone. */
  const persisted = (query: string, hashOnly = false) =>
    request(t, 'POST', '/graphql', {
      body: {
        ...(!hashOnly && { query }),
        extensions: { persistedQuery: { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') } },
      },
    });

  test('when persisted queries pass their budget, then the first is forgotten (PERSISTED_QUERY_NOT_FOUND); a few do not push it out', async () => {
    t = await startTestApp();
    const first = '{ pets(limit: 4) { id } }';
    expect(answerOf((await persisted(first)).body)).toEqual({ data: { pets: [] } });
    for (let i = 0; i < 10; i++) expect(answerOf((await persisted(commented(i))).body)).toEqual({ data: { __typename: 'Query' } });
    expect(answerOf((await persisted(first, true)).body)).toEqual({ data: { pets: [] } });
    // 2.5 MiB of query texts, past the 2 MiB budget (Apollo's default cache kept 30 MiB).
    const count = Math.ceil((1.25 * DOCUMENT_CACHE_LIMITS.persistedQueryBytes) / (50 * 1024));
    for (let i = 10; i < count; i++) await persisted(commented(i));
    expect((await persisted(first, true)).body).toMatchObject({ errors: [{ extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] });
  });
});

describe("the cost limit's prices", () => {
  test('when operations arrive with distinct large variables, then the prices kept for them stay within their budget', async () => {
    const t = await startTestApp();
    try {
      const query = 'query($id: ID!) { pet(id: $id) { id } }';
      // 30,000 characters above U+00FF: 60 KB in the body (UTF-8), 60 KB in a key (V8 keeps them two bytes each).
      const id = (i: number) => `${i}${'Ā'.repeat(30_000)}`;
      // The same request first, so that what every request leaves (pools, compiled code) is there before measuring.
      for (let i = 0; i < 200; i++) await graphql(t, query, { id: id(0) });
      const before = settledHeap();
      for (let i = 1; i <= 200; i++) expect((await graphql(t, query, { id: id(i) })).status).toBe(200);
      const grown = settledHeap() - before;
      console.info(`prices of 200 distinct 60 KB variables: the heap grew ${(grown / 1024 / 1024).toFixed(1)} MiB`);
      // 12 MB of keys offered; the budget is 1 MiB (the count-and-characters bound kept 8 MB of them).
      expect(grown).toBeLessThan(DOCUMENT_CACHE_LIMITS.priceBytes + 2 * 1024 * 1024);
    } finally {
      await t.close();
    }
  });
});

describe("graphql-jit's compiled operations", () => {
  /** A schema whose one field answers the `marker` set on the operation it was compiled from. */
  const markerSchema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        marker: { type: GraphQLString, resolve: (_source, _args, _context, info) => String((info.operation as unknown as { marker: number }).marker) },
      },
    }),
  });

  /** Runs `query` through `executor` as Apollo would, from a freshly parsed document marked `marker`. */
  async function run(executor: GatewayExecutor, query: string, marker: number) {
    const document = parse(query);
    const operation = Object.assign(operationOf(document), { marker });
    const context = {
      document,
      operation,
      operationName: null,
      queryHash: createHash('sha256').update(query).digest('hex'),
      source: query,
      request: { query },
      context: {},
    };
    return (await executor(context as unknown as GatewayGraphQLRequestContext)).data;
  }

  test('when compiled operations pass the budget, then the first is compiled again; a few do not push it out', async () => {
    const budget = 1024 * 1024;
    const gateway = jitExecutorGateway(markerSchema, { maxBytes: budget, onFallback: () => undefined, traced: false });
    gateway.onSchemaLoadOrUpdate(() => undefined);
    const executor = (await gateway.load({ apollo: {} })).executor!;
    const first = '{ marker }';
    expect(await run(executor, first, 1)).toEqual({ marker: '1' });
    const other = (i: number) => `#${'x'.repeat(50 * 1024)}\nquery D${i} { marker }`;
    for (let i = 0; i < 5; i++) await run(executor, other(i), 0);
    // Still the code compiled from the first document.
    expect(await run(executor, first, 2)).toEqual({ marker: '1' });
    const count = Math.ceil((1.25 * budget) / (50 * 1024));
    for (let i = 5; i < count; i++) await run(executor, other(i), 0);
    expect(await run(executor, first, 3)).toEqual({ marker: '3' });
  });
});
