import type { GatewayExecutor, GatewayGraphQLRequestContext } from '@apollo/server-gateway-interface';
import { type GraphQLSchema, Kind, buildSchema, execute, getIntrospectionQuery, parse, printSchema } from 'graphql';
import { buildPetStoreSchema } from '../../src/graphql/schema';
import { type JitFallback, jitExecutorGateway } from '../../src/graphql/jit-executor.gateway';
import * as httpRules from '../../src/graphql/subscriptions-over-http.rule';
import { answerOf, createPet, graphql, startTestApp } from '../helpers/test-app';
import { DOCUMENT_CACHE_LIMITS } from '../../src/limits';

/**
 * The gateway executor on its own (the suites of both surfaces run every operation through
 * it): which documents compile, what runs when one does not, and how variables are coerced.
 */
let schema: GraphQLSchema;
let executor: GatewayExecutor;
const fallbacks: JitFallback[] = [];

beforeAll(async () => {
  schema = await buildPetStoreSchema();
  const gateway = jitExecutorGateway(schema, {
    maxBytes: DOCUMENT_CACHE_LIMITS.compiledOperationBytes,
    onFallback: (fallback) => fallbacks.push(fallback),
    traced: false,
  });
  gateway.onSchemaLoadOrUpdate(() => undefined);
  executor = (await gateway.load({ apollo: {} })).executor!;
});
beforeEach(() => {
  fallbacks.length = 0;
});

/** What Apollo hands the executor, for a document it has validated. */
function requestFor(query: string, variables: Record<string, unknown> = {}): GatewayGraphQLRequestContext {
  const document = parse(query);
  const operation = document.definitions.find((definition) => definition.kind === Kind.OPERATION_DEFINITION)!;
  return {
    document,
    operation,
    operationName: null,
    queryHash: query,
    source: query,
    request: { query, variables },
    context: {},
  } as unknown as GatewayGraphQLRequestContext;
}

describe('graphql-jit behind Apollo', () => {
  test.each([
    ['listPets', '{ pets(limit: 5, status: available) { id name categoryId status } }'],
    ['getPet', 'query($id: ID!) { pet(id: $id) { id name categoryId status } }'],
    ['createPet', 'mutation($input: NewPetInput!) { createPet(input: $input) { id name categoryId status } }'],
    ['introspection (GraphiQL)', getIntrospectionQuery()],
  ])('when %s is compiled, then it does not fall back to graphql-js', async (_name, query) => {
    // No resolver instance (schema for printing only): what matters is that compiling succeeded.
    await executor(requestFor(query, { id: '1', input: { name: 'Rex', categoryId: 1 } }));
    expect(fallbacks).toEqual([]);
  });

  test('when jit cannot compile a document, then graphql-js runs it and the fallback is reported once', async () => {
    // Two operations and no name: Apollo never lets this through; here it stands for any document jit refuses.
    const query = 'query A { __typename } query B { __typename }';
    const first = await executor(requestFor(query));
    await executor(requestFor(query));
    expect(fallbacks).toEqual([{ operationName: null, reason: expect.stringContaining('operation name') }]);
    // graphql-js answered it, with its own error for the same document.
    expect(first).toEqual({ errors: [expect.objectContaining({ message: 'Must provide operation name if query contains multiple operations.' })] });
  });

  test('when variables do not fit, then graphql-js coerces them: its one error, with locations, and nothing runs', async () => {
    const result = await executor(requestFor('query($limit: Int) { pets(limit: $limit) { id } }', { limit: 'many' }));
    expect(result.data).toBeUndefined();
    expect(result.errors).toHaveLength(1);
    expect(result.errors![0]).toMatchObject({ message: expect.stringContaining('$limit'), locations: [{ line: 1, column: 7 }] });
  });

  test('when the request names an operation the document lacks, then graphql-js reports it, nothing runs and nothing is compiled (it was a 500)', async () => {
    const query = 'query A { pets { id } }';
    // Apollo found no operation: it passes none, and its resolved operationName is null.
    const context = {
      ...requestFor(query),
      operation: undefined,
      request: { query, operationName: 'B', variables: {} },
    } as unknown as GatewayGraphQLRequestContext;
    const result = await executor(context);
    expect(result).toEqual({ errors: [expect.objectContaining({ message: 'Unknown operation named "B".' })] });
    expect(fallbacks).toEqual([]); // over HTTP: OPERATION_RESOLUTION_FAILURE (test/integration/graphql-status-codes.test.ts)
  });

  test('when a default applies to a variable, then jit gets the coerced value (graphql-js applies the default)', async () => {
    const query = 'query($limit: Int = 3) { __typename }';
    const result = await executor(requestFor(query, {}));
    expect(result).toEqual({ data: { __typename: 'Query' } });
    expect(fallbacks).toEqual([]);
  });
});

describe('errors from compiled operations, in production', () => {
  test('when a compiled operation fails, then Armor (which rewrites messages in production) gets a GraphQLError: the catalogue code, not a 500', async () => {
    const t = await startTestApp({ env: { NODE_ENV: 'production' } });
    try {
      const result = await graphql(t, 'query($limit: Int) { pets(limit: $limit) { id } }', { limit: 500 });
      expect(result.status).toBe(200);
      expect(answerOf(result.body)).toEqual({
        data: null,
        errors: [{ message: expect.stringContaining('limit'), locations: [{ line: 1, column: 22 }], path: ['pets'], extensions: { code: 'BAD_USER_INPUT' } }],
      });
    } finally {
      await t.close();
    }
  });
});

describe('work done once per document, not per request', () => {
  test('when one query is sent three times, then Apollo validates it once (its document store, with our plugins), and a new query once more', async () => {
    // Our own validation rule runs beside Armor's: each call of it is one validation of a document.
    const validations = jest.spyOn(httpRules, 'refuseSubscriptionsOverHttp');
    const t = await startTestApp();
    try {
      for (let i = 0; i < 3; i++) expect(answerOf((await graphql(t, '{ pets(limit: 2) { id } }')).body)).toEqual({ data: { pets: [] } });
      expect(validations).toHaveBeenCalledTimes(1);
      await graphql(t, '{ pets(limit: 3) { id } }');
      expect(validations).toHaveBeenCalledTimes(2);
    } finally {
      validations.mockRestore();
      await t.close();
    }
  });
});

describe('a @skip or @include whose condition is a null variable', () => {
  // `Boolean = false` lets `$i` stand where `Boolean!` is expected; an explicit null still reaches `if`.
  const documents = [
    ['on a root field', 'query ($i: Boolean = false) { __typename @include(if: $i) }'],
    ['on a nested field', 'query ($i: Boolean = false) { pets { id name @skip(if: $i) } }'],
    ['on an inline fragment', 'query ($i: Boolean = false) { pets { ... on Pet @include(if: $i) { id } } }'],
  ];

  test.each(documents)('when the condition %s is null, then the answer is the one graphql-js gives, coded BAD_USER_INPUT', async (_where, query) => {
    // graphql-js on the same schema without resolvers, the pets given as its root value.
    const reference = await execute({
      schema: buildSchema(printSchema(schema)),
      document: parse(query),
      variableValues: { i: null },
      rootValue: { pets: [{ id: 1 }] },
    });
    expect(reference.errors).toHaveLength(1);
    const t = await startTestApp();
    try {
      await createPet(t, { name: 'Rex', categoryId: 1 });
      const result = await graphql(t, query, { i: null });
      expect(result.status).toBe(200);
      const { message, locations, path } = reference.errors![0];
      expect(answerOf(result.body)).toEqual({ data: null, errors: [{ message, locations, path, extensions: { code: 'BAD_USER_INPUT' } }] });
      expect(message).toBe('Argument "if" of non-null type "Boolean!" must not be null.');
    } finally {
      await t.close();
    }
  });
});
