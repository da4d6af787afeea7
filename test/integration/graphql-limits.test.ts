import { getIntrospectionQuery } from 'graphql';
import { createLogger } from '../../src/observability/logger';
import { aliases, depth, directives, tokens, typenameAliases } from '../helpers/limit-documents';
import { countPets, createPet, graphql, request, startTestApp, type TestApp } from '../helpers/test-app';
import { HTTP_LIMITS, QUERY_LIMITS } from '../../src/limits';

/** The largest GraphQL request body the server reads. */
const GRAPHQL_BODY_LIMIT = HTTP_LIMITS.graphqlBodyBytes;

let t: TestApp;
/** The app's log lines at info and above. */
const logLines: Array<Record<string, any>> = [];
beforeAll(async () => {
  t = await startTestApp({ observe: { logger: createLogger('info', { write: (line) => void logLines.push(JSON.parse(line)) }) } });
  await createPet(t);
});
afterAll(() => t.close());

async function expectAccepted(query: string, variables?: Record<string, unknown>) {
  const result = await graphql(t, query, variables);
  expect({ status: result.status, errors: result.body.errors }).toEqual({ status: 200, errors: undefined });
}

/**
 * A limit rejection: 400 whatever the Accept (docs/security.md "Limits"), here with fetch's bare wildcard,
 * answered in application/json, whose message names the limit and its maximum.
 */
async function expectRejected(message: string, query: string, variables?: Record<string, unknown>) {
  const result = await graphql(t, query, variables);
  expect(result.headers.get('content-type')).toMatch(/^application\/json/);
  expect(result.status).toBe(400);
  expect(result.body.data).toBeUndefined();
  expect(result.body.errors).toHaveLength(1);
  expect(result.body.errors[0].extensions.code).toMatch(/^GRAPHQL_(VALIDATION|PARSE)_FAILED$/);
  expect(result.body.errors[0].message).toBe(message);
}

/** The message of a refusal by the cost limit. */
const overCost = (cost: number) => `Query cost ${cost.toLocaleString('en-US')} exceeds the maximum of 1,000.`;
/** The message of a refusal by the mutation limit. */
const overMutations = (n: number) => `The operation runs ${n} mutation fields; the maximum is 1.`;

/** Relay-style colocated fragments around `n` levels of fields: spreads and inline fragments nested `spreads` times. */
const relayFragments = (spreads: number) =>
  `{ petsConnection(first: 2) { edges { node { ...Row } } } } fragment Row on Pet { ...Name id ${'... on Pet { '.repeat(spreads)}status${' }'.repeat(spreads)} } fragment Name on Pet { name }`;
const pricedLists = (limits: number[]) =>
  `query${limits.includes(-1) ? '($n: Int)' : ''} { ${limits.map((limit, i) => `l${i}: pets(limit: ${limit === -1 ? '$n' : limit}) { id name categoryId status }`).join(' ')} }`;

/** Each document limit's message for an operation that holds `found`: Armor's, and graphql-js's for tokens. */
const ALIASES = (found: number) => `Aliases limit of ${QUERY_LIMITS.maxAliases} exceeded, found ${found}.`;
const DIRECTIVES = (found: number) => `Directives limit of ${QUERY_LIMITS.maxDirectives} exceeded, found ${found}.`;
const TOKENS = () => `Syntax Error: Document contains more that ${QUERY_LIMITS.maxTokens} tokens. Parsing aborted.`;
const DEPTH = (found: number) => `Query depth limit of ${QUERY_LIMITS.maxDepth} exceeded, found ${found}.`;

describe.each([
  ['aliases', QUERY_LIMITS.maxAliases, aliases, ALIASES],
  ['__typename aliases', QUERY_LIMITS.maxAliases, typenameAliases, ALIASES],
  ['directives', QUERY_LIMITS.maxDirectives, directives, DIRECTIVES],
  ['tokens', QUERY_LIMITS.maxTokens, tokens, TOKENS],
  ['depth', QUERY_LIMITS.maxDepth, depth, DEPTH],
])('the %s limit', (_name, limit, build, message) => {
  test(`when an operation is at the limit, then it runs`, () => expectAccepted(build(limit)));
  test(`when an operation is one over the limit, then it is refused with a message naming the limit and its maximum`, () =>
    expectRejected(message(limit + 1), build(limit + 1)));
});

describe('the cost limit (a list costs its limit times its selection)', () => {
  test('when lists add up to the maximum cost, then the operation runs', () => expectAccepted(pricedLists([100, 100, QUERY_LIMITS.maxCost / 4 - 200])));

  test('when they add up to one list entry more, then it is refused, the message giving the price and the maximum', () =>
    expectRejected(overCost(QUERY_LIMITS.maxCost + 4), pricedLists([100, 100, QUERY_LIMITS.maxCost / 4 - 199])));

  test('when the limit comes from a variable, then the variable sets the price', async () => {
    await expectAccepted(pricedLists([100, 100, -1]), { n: QUERY_LIMITS.maxCost / 4 - 200 });
    await expectRejected(overCost(QUERY_LIMITS.maxCost + 4), pricedLists([100, 100, -1]), { n: QUERY_LIMITS.maxCost / 4 - 199 });
  });

  test('when an operation is refused by a limit, then one info line names the limit, its maximum and the price', async () => {
    logLines.length = 0;
    await expectRejected(overCost(QUERY_LIMITS.maxCost + 4), pricedLists([100, 100, QUERY_LIMITS.maxCost / 4 - 199]));
    await expectRejected(DEPTH(QUERY_LIMITS.maxDepth + 1), depth(QUERY_LIMITS.maxDepth + 1));
    await expectRejected(overMutations(2), creates(2));
    const refusals = logLines.filter((line) => line.msg === 'GraphQL operation refused by a query limit');
    expect(refusals).toEqual([
      expect.objectContaining({
        level: 30,
        queryLimit: { limit: 'cost', maximum: QUERY_LIMITS.maxCost, found: QUERY_LIMITS.maxCost + 4 },
        cost: QUERY_LIMITS.maxCost + 4,
        reason: overCost(QUERY_LIMITS.maxCost + 4),
      }),
      expect.objectContaining({ level: 30, queryLimit: { limit: 'depth', maximum: QUERY_LIMITS.maxDepth }, reason: DEPTH(QUERY_LIMITS.maxDepth + 1) }),
      expect.objectContaining({ level: 30, queryLimit: { limit: 'mutations', maximum: 1, found: 2 }, cost: 200, reason: overMutations(2) }),
    ]);
    expect(refusals[1].cost).toBeUndefined();
  });

  test('when the standard introspection query is sent, then it runs (GraphiQL needs it)', () => expectAccepted(getIntrospectionQuery()));

  /** The price an answer states. */
  const priceOf = async (query: string) => (await graphql(t, query)).body.extensions.cost.requestedQueryCost;
  const connection = (typename: string) =>
    `{ petsConnection(first: 100) { ${typename} edges { ${typename} cursor node { ${typename} id name categoryId status } } pageInfo { ${typename} hasNextPage hasPreviousPage startCursor endCursor } } }`;

  test('when `__typename` is selected at every level, as caching clients add it, then it costs nothing and a full page with every pageInfo field still fits', async () => {
    expect(await priceOf('{ __typename }')).toBe(0);
    // 100 × (edges, cursor, node and its 4 fields) + pageInfo and its 4 fields once.
    expect(await priceOf(connection(''))).toBe(705);
    expect(await priceOf(connection('__typename'))).toBe(705);
    await expectAccepted(connection('__typename'));
  });

  test('when a page selects pageInfo, then pageInfo is priced once per page, not once per pet; through a fragment spread, per pet (never less)', async () => {
    const page = (pageInfo: string) =>
      `{ petsConnection(first: 50) { edges { node { id } } ${pageInfo} } }` +
      (pageInfo === '...P' ? ' fragment P on PetConnection { pageInfo { hasNextPage endCursor } }' : '');
    expect(await priceOf(page(''))).toBe(150);
    expect(await priceOf(page('pageInfo { hasNextPage endCursor }'))).toBe(153);
    expect(await priceOf(page('... on PetConnection { pageInfo { hasNextPage } }'))).toBe(152);
    expect(await priceOf(page('...P'))).toBe(300);
  });

  test('when one document is sent with other list sizes, conditions or ids, then each is priced by its own variables', async () => {
    const priceWith = async (query: string, variables: Record<string, unknown>) => (await graphql(t, query, variables)).body.extensions.cost.requestedQueryCost;
    const list = 'query L($n: Int, $withName: Boolean!, $status: PetStatus) { pets(limit: $n, status: $status) { id name @include(if: $withName) } }';
    expect(await priceWith(list, { n: 50, withName: true })).toBe(100);
    expect(await priceWith(list, { n: 90, withName: true, status: 'sold' })).toBe(180);
    expect(await priceWith(list, { n: 90, withName: false, status: 'sold' })).toBe(100);
    expect(await priceWith(list, { n: 90, withName: false })).toBe(100);
    const connectionPage = 'query C($first: Int!, $after: String) { petsConnection(first: $first, after: $after) { edges { node { id name } } } }';
    expect(await priceWith(connectionPage, { first: 100 })).toBe(400);
    expect(await priceWith(connectionPage, { first: 60, after: null })).toBe(240);
  });

  test('when introspection is sent, then `__schema` and `__type` cost nothing of their own and their selection 1 per field', async () => {
    expect(await priceOf('{ __schema { queryType { name } } }')).toBe(2);
    expect(await priceOf('{ __type(name: "Pet") { name fields { name } } }')).toBe(3);
    expect(await priceOf(getIntrospectionQuery())).toBe(219);
  });
});

/** The most fields that read or write the database one operation may hold: each costs at least one request's worth. */
const MAX_DATABASE_FIELDS = QUERY_LIMITS.maxCost / QUERY_LIMITS.databaseFieldMinCost;

describe.each([
  ['lookups by id', (i: number) => `p${i}: pet(id: "1") { id name categoryId status }`],
  ['one-pet lists', (i: number) => `l${i}: pets(limit: 1) { id }`],
])('each field that reads the database costs at least one request (%s)', (_name, field) => {
  const operation = (n: number) => `{ ${Array.from({ length: n }, (_, i) => field(i)).join(' ')} }`;
  test(`when an operation holds ${MAX_DATABASE_FIELDS} of them (the maximum cost), then it runs`, () => expectAccepted(operation(MAX_DATABASE_FIELDS)));
  test('when it holds one more, then it is refused', () =>
    expectRejected(overCost((MAX_DATABASE_FIELDS + 1) * QUERY_LIMITS.databaseFieldMinCost), operation(MAX_DATABASE_FIELDS + 1)));
});

const newPet = (alias: string) => `${alias}createPet(input: { name: "Rex", categoryId: 1 }) { id }`;
const creates = (n: number) => `mutation { ${Array.from({ length: n }, (_, i) => newPet(`c${i}: `)).join(' ')} }`;

describe('the mutation limit (createPet fields per operation)', () => {
  test(`when an operation creates ${QUERY_LIMITS.maxMutations}, then it runs and stores them`, async () => {
    const before = await countPets(t);
    await expectAccepted(creates(QUERY_LIMITS.maxMutations));
    expect(await countPets(t)).toBe(before + QUERY_LIMITS.maxMutations);
  });

  test.each([
    ['one more, aliased', 2, creates(QUERY_LIMITS.maxMutations + 1)],
    ['one more, through fragments', 2, `mutation { ...A ...B } fragment A on Mutation { ${newPet('a: ')} } fragment B on Mutation { ${newPet('b: ')} }`],
    [
      '16, as in issue 10 (15 aliases and one plain field)',
      16,
      `mutation { ${newPet('')} ${Array.from({ length: 15 }, (_, i) => newPet(`c${i}: `)).join(' ')} }`,
    ],
  ])('when an operation creates %s, then it is refused with a message naming the limit, and no pet is stored', async (_name, found, operation) => {
    const before = await countPets(t);
    await expectRejected(overMutations(found), operation);
    expect(await countPets(t)).toBe(before);
  });
});

describe('known attacks are refused', () => {
  // The token limit is the first it meets: about 9,000 tokens.
  test('when one operation asks 1000 aliases of the biggest list, then it is refused before any data is read', () =>
    expectRejected(TOKENS(), `{ ${Array.from({ length: 1000 }, (_, i) => `a${i}: pets(limit: 100) { id }`).join(' ')} }`));

  test.each([
    ['application/json', 200],
    ['application/graphql-response+json', 400],
  ])('when fragments refer to each other in a cycle (Accept %s), then graphql-js refuses it before running: HTTP %i', async (accept, status) => {
    const result = await graphql(t, 'query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }', undefined, { accept });
    // A spec validation error, not one of our limits: its status follows the Accept (docs/graphql.md "Status codes").
    expect(result.status).toBe(status);
    expect(result.body.data).toBeUndefined();
    expect(result.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
  });

  test('when nesting is 100 levels deep, then it is refused', () => expectRejected(DEPTH(100), depth(100)));

  test('when Relay-style fragments nest 8 deep around fields 4 deep, then it runs: depth counts fields, not fragments', () =>
    expectAccepted(relayFragments(8)));

  test('when fragments multiply past what the cost can be computed for (40,000 nodes), then it is refused rather than run unpriced', () =>
    expectRejected(
      'Query cannot be priced: with its fragments expanded it holds more than 10,000 selections.',
      `{ ...A } fragment A on Query { ${'...B '.repeat(200)}} fragment B on Query { pets(limit: 100) { id name categoryId status } ${'__typename '.repeat(200)}}`,
    ));

  describe(`the body limit, HTTP_LIMITS.graphqlBodyBytes (${GRAPHQL_BODY_LIMIT} bytes)`, () => {
    const query = 'mutation($n: String!) { createPet(input: {name: $n, categoryId: 1}) { id } }';
    /** A createPet request of exactly `bytes` bytes, filled out by its name argument. */
    const bodyOfSize = (bytes: number) => {
      const shell = JSON.stringify({ query, variables: { n: '' } });
      return JSON.stringify({ query, variables: { n: 'x'.repeat(bytes - shell.length) } });
    };
    const send = (body: string) => request(t, 'POST', '/graphql', { body, headers: { 'content-type': 'application/json' } });

    test('when a string argument fills the body to exactly the limit, then it is read: BAD_USER_INPUT for the name, not 413', async () => {
      const before = await countPets(t);
      const body = bodyOfSize(GRAPHQL_BODY_LIMIT);
      expect(Buffer.byteLength(body)).toBe(GRAPHQL_BODY_LIMIT);
      const result = await send(body);
      expect(result.status).toBe(200); // GraphQL over HTTP: execution errors travel in a 200
      expect(result.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      expect(await countPets(t)).toBe(before);
    });

    test('when a string argument makes the body one byte over the limit, then 413 PAYLOAD_TOO_LARGE and nothing is stored', async () => {
      const before = await countPets(t);
      const body = bodyOfSize(GRAPHQL_BODY_LIMIT + 1);
      expect(Buffer.byteLength(body)).toBe(GRAPHQL_BODY_LIMIT + 1);
      const result = await send(body);
      expect(result.status).toBe(413);
      expect(result.body.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
      expect(await countPets(t)).toBe(before);
    });
  });

  test('when several operations are batched in one request, then the request is refused', async () => {
    const result = await request(t, 'POST', '/graphql', { body: [{ query: '{ __typename }' }, { query: '{ __typename }' }] });
    expect(result.status).toBe(400);
    expect(result.body.errors[0].extensions.code).toBe('BAD_REQUEST');
  });
});

describe('field suggestions', () => {
  test.each([
    ['development', true],
    ['production', false],
  ] as const)('when NODE_ENV is %s, then "Did you mean" hints shown: %s', async (nodeEnv, shown) => {
    const app = await startTestApp({ env: { NODE_ENV: nodeEnv } });
    try {
      const result = await graphql(app, '{ petz { id } }', undefined, { accept: 'application/graphql-response+json' });
      expect(result.status).toBe(400);
      expect(/Did you mean/.test(result.body.errors[0].message)).toBe(shown);
    } finally {
      await app.close();
    }
  });
});
