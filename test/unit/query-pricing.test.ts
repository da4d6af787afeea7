import 'reflect-metadata';
import type { FastifyBaseLogger } from 'fastify';
import {
  type GraphQLSchema,
  GraphQLError,
  Kind,
  OperationTypeNode,
  type OperationDefinitionNode,
  getIntrospectionQuery,
  getOperationAST,
  parse,
  specifiedRules,
} from 'graphql';
import { type DocumentRefusal, checkDocument, priceOf, pricedVariablesKey, refusalOf } from '../../src/graphql/document-check';
import {
  PARSE_OPTIONS,
  QueryLimitError,
  armorSettings,
  connectionFieldCost,
  databaseFieldCost,
  priceRefusal,
  queryLimitOf,
  unpriceableRefusal,
} from '../../src/graphql/query-limits';
import { buildPetStoreSchema } from '../../src/graphql/schema';
import { QUERY_LIMITS } from '../../src/limits';
import { aliases, depth, directives, tokens, typenameAliases } from '../helpers/limit-documents';

/**
 * Query pricing and the document limits (docs/security.md "Limits") in process, against the real schema (built
 * without a database, as for printing) and the real validation rules (Armor's, as graphql.plugin.ts installs them).
 * checkDocument is what the WebSocket path runs; the HTTP path runs the same rules and priceOf in Apollo.
 */

let schema: GraphQLSchema;
beforeAll(async () => {
  schema = await buildPetStoreSchema();
});

/** Armor's rules in development, after graphql-js's own, as subscription.server.ts combines them. */
const RULES = [...specifiedRules, ...armorSettings(false).validationRules];

/** priceOf for a document, as cost-limit.plugin.ts calls it. */
function price(query: string, variables: Record<string, unknown> = {}, operationName?: string) {
  const document = parse(query, PARSE_OPTIONS);
  const operation = getOperationAST(document, operationName)!;
  return priceOf(schema, document, operation, operationName, variables);
}
const cost = (query: string, variables?: Record<string, unknown>) => {
  const result = price(query, variables);
  if ('unpriceable' in result) throw new Error('unpriceable');
  return result.cost;
};

/** Info lines the check logged. */
let logged: Array<{ object: Record<string, unknown>; message: string }> = [];
const log = { info: (object: Record<string, unknown>, message: string) => void logged.push({ object, message }) } as unknown as FastifyBaseLogger;
beforeEach(() => {
  logged = [];
});

/** checkDocument for a query operation. */
function check(query: string, variables?: Record<string, unknown>, operationName?: string) {
  return checkDocument(schema, RULES, { query, variables, operationName }, log, { operation: OperationTypeNode.QUERY, message: 'Only queries here.' });
}
function refusals(query: string, variables?: Record<string, unknown>): DocumentRefusal[] {
  const result = check(query, variables);
  if (!('refusals' in result)) throw new Error(`accepted: ${query}`);
  return result.refusals;
}

const FULL_PET = 'id name categoryId status';
const pricedLists = (limits: number[]) => `{ ${limits.map((limit, i) => `l${i}: pets(limit: ${limit}) { ${FULL_PET} } `).join('')}}`;
const overCost = (n: number) => `Query cost ${n.toLocaleString('en-US')} exceeds the maximum of ${QUERY_LIMITS.maxCost.toLocaleString('en-US')}.`;

describe('the cost functions', () => {
  test.each([
    [1, 1, 100],
    [1, 4, 100],
    [20, 4, 100],
    [25, 4, 100],
    [26, 4, 104],
    [100, 4, 400],
    [100, 10, 1000],
  ])('when a database field returns %i pets of selection %i, then it costs %i (at least databaseFieldMinCost)', (pets, selection, expected) => {
    expect(databaseFieldCost(pets, selection)).toBe(expected);
  });

  test('when a connection selects pageInfo directly, then pageInfo is counted once and the rest per pet', () => {
    const connection = (selection: string) =>
      (parse(`{ petsConnection(first: 100) { ${selection} } }`).definitions[0] as OperationDefinitionNode).selectionSet.selections[0];
    const node = connection('edges { node { id } } pageInfo { hasNextPage endCursor }');
    if (node.kind !== Kind.FIELD) throw new Error('not a field');
    // Selection 6: edges, node and id (3, per pet), pageInfo and its 2 fields (3, once).
    expect(connectionFieldCost(100, 6, node)).toBe(100 * 3 + 3);
    expect(connectionFieldCost(1, 6, node)).toBe(QUERY_LIMITS.databaseFieldMinCost);
  });
});

describe('priceOf against the schema', () => {
  test.each([
    ['`__typename` alone', '{ __typename }', 0],
    ['one full page of pets', `{ pets(limit: 100) { ${FULL_PET} } }`, 400],
    ['one pet field of a full page', '{ pets(limit: 100) { id } }', 100],
    ['the default page (20) of every field', `{ pets { ${FULL_PET} } }`, 100],
    ['a page of 26 of every field', `{ pets(limit: 26) { ${FULL_PET} } }`, 104],
    ['a page size under the minimum (priced as 1)', `{ pets(limit: 0) { ${FULL_PET} } }`, 100],
    ['a page size over the maximum (priced as 100)', `{ pets(limit: 1000) { ${FULL_PET} } }`, 400],
    ['a lookup by id', `{ pet(id: "1") { ${FULL_PET} } }`, 100],
    ['a Relay refetch by id', `{ node(id: "1") { id ... on Pet { name categoryId status } } }`, 100],
    ['`__typename` inside a page', `{ pets(limit: 100) { __typename ${FULL_PET} } }`, 400],
    ['two full pages', `{ a: pets(limit: 100) { ${FULL_PET} } b: pets(limit: 100) { ${FULL_PET} } }`, 800],
    ['a fragment spread', `{ pets(limit: 100) { ...F } } fragment F on Pet { ${FULL_PET} }`, 400],
    ['an inline fragment', `{ pets(limit: 100) { ... on Pet { ${FULL_PET} } } }`, 400],
    ['a field skipped', '{ pets(limit: 100) { id name @skip(if: true) } }', 100],
    ['a field not skipped', '{ pets(limit: 100) { id name @skip(if: false) } }', 200],
    ['a field included', '{ pets(limit: 100) { id name @include(if: true) } }', 200],
    ['a field not included', '{ pets(limit: 100) { id name @include(if: false) } }', 100],
    ['a skipped list', `{ a: pets(limit: 100) { id } b: pets(limit: 100) @skip(if: true) { ${FULL_PET} } }`, 100],
    ['a create', 'mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } }', 100],
    ['introspection of the query type', '{ __schema { queryType { name } } }', 2],
    ['introspection of a type', '{ __type(name: "Pet") { name fields { name } } }', 3],
    ['the standard introspection query', getIntrospectionQuery(), 219],
  ])('when the operation is %s, then it costs %i', (_case, query, expected) => {
    expect(cost(query)).toBe(expected);
  });

  const aliased = Array.from({ length: 150 }, (_, i) => `n${i}: name`).join(' ');
  test.each([
    ['every field', 100, FULL_PET],
    ['`__typename` and the id', 100, '__typename id'],
    ['150 aliased names (over the minimum)', 150, aliased],
  ])('when node(id:) selects %s of a Pet, then it costs %i, one call, as pet(id:) with that selection', (_case, expected, selection) => {
    const node = price(`{ node(id: "1") { ... on Pet { ${selection} } } }`);
    expect(node).toEqual({ cost: expected, calls: 1, mutations: 0 });
    expect(node).toEqual(price(`{ pet(id: "1") { ${selection} } }`));
  });

  const connection = (typename: string) =>
    `{ petsConnection(first: 100) { ${typename} edges { ${typename} cursor node { ${typename} ${FULL_PET} } } pageInfo { ${typename} hasNextPage hasPreviousPage startCursor endCursor } } }`;

  test('when a full connection page selects every field, then 705 with or without `__typename` everywhere (it fits the maximum)', () => {
    expect(cost(connection(''))).toBe(705);
    expect(cost(connection('__typename'))).toBe(705);
    expect(cost(`{ a: ${connection('').slice(2, -2)} b: ${connection('').slice(2, -2)} }`)).toBe(1410);
  });

  test('when a page selects pageInfo directly or in an inline fragment, then once per page; through a fragment spread, per pet', () => {
    const page = (pageInfo: string, fragments = '') => `{ petsConnection(first: 50) { edges { node { id } } ${pageInfo} } }${fragments}`;
    expect(cost(page(''))).toBe(150);
    expect(cost(page('pageInfo { hasNextPage endCursor }'))).toBe(153);
    expect(cost(page('... on PetConnection { pageInfo { hasNextPage } }'))).toBe(152);
    expect(cost(page('...P', ' fragment P on PetConnection { pageInfo { hasNextPage endCursor } }'))).toBe(300);
  });

  test('when list sizes and conditions come from variables, then the variables set the price', () => {
    const list = 'query L($n: Int, $withName: Boolean!, $status: PetStatus) { pets(limit: $n, status: $status) { id name @include(if: $withName) } }';
    expect(cost(list, { n: 50, withName: true })).toBe(100);
    expect(cost(list, { n: 90, withName: true, status: 'sold' })).toBe(180);
    expect(cost(list, { n: 90, withName: false, status: 'sold' })).toBe(100);
    // null: priced as a full page (execution refuses it); absent: the argument's default, 20 × 2 fields, so the minimum.
    expect(cost(list, { n: null, withName: true })).toBe(200);
    expect(cost(list, { withName: true })).toBe(100);
    expect(cost(list.replace('id name', 'id categoryId status name'), { withName: true })).toBe(100);
    expect(cost(list.replace('id name', 'id categoryId status name'), { n: 30, withName: true })).toBe(120);
    const page = 'query C($first: Int!, $after: String) { petsConnection(first: $first, after: $after) { edges { node { id name } } } }';
    expect(cost(page, { first: 100 })).toBe(400);
    expect(cost(page, { first: 60, after: null })).toBe(240);
  });

  test('when a condition variable is null (execution will refuse it), then it is priced with every condition true', () => {
    expect(cost('query ($c: Boolean) { pets(limit: 100) { id name @include(if: $c) status @skip(if: $c) } }', { c: null })).toBe(300);
  });

  test('when a document holds several operations, then only the named one is priced', () => {
    const document = `query A { pets(limit: 100) { id } } query B { pets(limit: 100) { ${FULL_PET} } }`;
    expect(price(document, {}, 'A')).toEqual({ cost: 100, calls: 1, mutations: 0 });
    expect(price(document, {}, 'B')).toEqual({ cost: 400, calls: 1, mutations: 0 });
  });

  test.each([
    ['no pet-store field', '{ __typename __schema { queryType { name } } }', 0, 0],
    ['three root fields', `{ a: pet(id: "1") { id } b: pet(id: "2") { id } pets { id } }`, 3, 0],
    ['a skipped root field', `{ a: pet(id: "1") { id } b: pet(id: "2") @skip(if: true) { id } }`, 1, 0],
    ['root fields through fragments', `{ ...Q ... on Query { pet(id: "2") { id } } } fragment Q on Query { pets { id } }`, 2, 0],
    ['one create', 'mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } }', 1, 1],
    [
      'two aliased creates',
      'mutation { a: createPet(input: { name: "A", categoryId: 1 }) { id } b: createPet(input: { name: "B", categoryId: 1 }) { id } }',
      2,
      2,
    ],
    [
      'creates through fragments',
      'mutation { ...A ...B } fragment A on Mutation { a: createPet(input: { name: "A", categoryId: 1 }) { id } } fragment B on Mutation { b: createPet(input: { name: "B", categoryId: 1 }) { id } }',
      2,
      2,
    ],
  ])('when the operation has %s, then calls %i and mutations %i', (_case, query, calls, mutations) => {
    expect(price(query)).toMatchObject({ calls, mutations });
  });

  test('when fragments expand past maxPricedSelections, then unpriceable, refused as "selections"', () => {
    const query = `{ ...A } fragment A on Query { ${'...B '.repeat(200)}} fragment B on Query { pets(limit: 100) { ${FULL_PET} } ${'__typename '.repeat(200)}}`;
    const result = price(query);
    expect(result).toEqual({ unpriceable: true });
    const refusal = refusalOf(result)!;
    expect(refusal).toBeInstanceOf(QueryLimitError);
    expect({
      limit: refusal.limit,
      maximum: refusal.maximum,
      found: refusal.found,
      code: refusal.code,
      status: refusal.status,
      message: refusal.message,
    }).toEqual({
      limit: 'selections',
      maximum: 10_000,
      found: undefined,
      code: 'GRAPHQL_VALIDATION_FAILED',
      status: 400,
      message: 'Query cannot be priced: with its fragments expanded it holds more than 10,000 selections.',
    });
  });
});

describe('pricedVariablesKey (the price cache key)', () => {
  const operationOf = (query: string) => getOperationAST(parse(query))!;

  test('when variables of other types are sent, then only Int and Boolean ones (at any list or non-null depth) are in the key', () => {
    const operation = operationOf('query ($n: Int, $b: Boolean!, $s: PetStatus, $a: String, $id: ID!, $l: [Int!]!, $f: Float) { __typename }');
    expect(pricedVariablesKey(operation, { n: 5, b: true, s: 'sold', a: 'cursor', id: '1', l: [1, 2], f: 1.5 })).toBe('{"n":5,"b":true,"l":[1,2]}');
  });

  test('when the priced variables agree, then the key is the same whatever the others', () => {
    const operation = operationOf('query ($n: Int, $a: String) { pets(limit: $n, after: $a) { id } }');
    expect(pricedVariablesKey(operation, { n: 5, a: 'x' })).toBe(pricedVariablesKey(operation, { n: 5, a: 'y' }));
    expect(pricedVariablesKey(operation, { n: 5 })).not.toBe(pricedVariablesKey(operation, { n: 6 }));
  });

  test('when the operation declares no variables, then the key is {}', () => {
    expect(pricedVariablesKey(operationOf('{ pets { id } }'), { n: 5 })).toBe('{}');
  });
});

describe('priceRefusal (mutations first, then cost)', () => {
  test.each([
    [{ cost: QUERY_LIMITS.maxCost, mutations: 0 }, undefined],
    [{ cost: 0, mutations: QUERY_LIMITS.maxMutations }, undefined],
    [
      { cost: QUERY_LIMITS.maxCost + 1, mutations: 0 },
      { limit: 'cost', maximum: 1000, found: 1001, message: 'Query cost 1,001 exceeds the maximum of 1,000.' },
    ],
    [
      { cost: 12_345, mutations: 1 },
      { limit: 'cost', maximum: 1000, found: 12_345, message: 'Query cost 12,345 exceeds the maximum of 1,000.' },
    ],
    [
      { cost: 200, mutations: 2 },
      { limit: 'mutations', maximum: 1, found: 2, message: 'The operation runs 2 mutation fields; the maximum is 1.' },
    ],
    [
      { cost: 5000, mutations: 16 },
      { limit: 'mutations', maximum: 1, found: 16, message: 'The operation runs 16 mutation fields; the maximum is 1.' },
    ],
  ])('when the price is %p, then %p', (found, expected) => {
    const refusal = priceRefusal(found);
    expect(refusal && { limit: refusal.limit, maximum: refusal.maximum, found: refusal.found, message: refusal.message }).toEqual(expected);
    if (refusal) expect(refusal.toBody()).toEqual({ code: 'GRAPHQL_VALIDATION_FAILED', status: 400, message: expected!.message });
  });
});

describe('queryLimitOf (which limit refused, for the log)', () => {
  test('when given a QueryLimitError, or a GraphQLError wrapping one, then its limit', () => {
    const error = new QueryLimitError('depth', 'too deep', 6);
    expect(queryLimitOf(error)).toBe(error);
    expect(queryLimitOf(new GraphQLError('too deep', { originalError: error }))).toBe(error);
  });

  test("when given graphql-js's token error (either spelling), then the token limit", () => {
    for (const word of ['that', 'than']) {
      expect(queryLimitOf(new GraphQLError(`Syntax Error: Document contains more ${word} 1000 tokens. Parsing aborted.`))).toEqual({
        limit: 'tokens',
        maximum: QUERY_LIMITS.maxTokens,
      });
    }
  });

  test('when given any other error, then undefined', () => {
    expect(queryLimitOf(new GraphQLError('Cannot query field "petz" on type "Query".'))).toBeUndefined();
    expect(queryLimitOf(new Error('Syntax Error: Document contains more than 1000 tokens. Parsing aborted. Really.'))).toBeUndefined();
  });
});

describe.each([
  [
    'aliases',
    QUERY_LIMITS.maxAliases,
    aliases,
    'GRAPHQL_VALIDATION_FAILED',
    (n: number) => `Aliases limit of ${QUERY_LIMITS.maxAliases} exceeded, found ${n}.`,
  ],
  [
    '__typename aliases',
    QUERY_LIMITS.maxAliases,
    typenameAliases,
    'GRAPHQL_VALIDATION_FAILED',
    (n: number) => `Aliases limit of ${QUERY_LIMITS.maxAliases} exceeded, found ${n}.`,
  ],
  [
    'directives',
    QUERY_LIMITS.maxDirectives,
    directives,
    'GRAPHQL_VALIDATION_FAILED',
    (n: number) => `Directives limit of ${QUERY_LIMITS.maxDirectives} exceeded, found ${n}.`,
  ],
  [
    'tokens',
    QUERY_LIMITS.maxTokens,
    tokens,
    'GRAPHQL_PARSE_FAILED',
    () => `Syntax Error: Document contains more that ${QUERY_LIMITS.maxTokens} tokens. Parsing aborted.`,
  ],
  ['depth', QUERY_LIMITS.maxDepth, depth, 'GRAPHQL_VALIDATION_FAILED', (n: number) => `Query depth limit of ${QUERY_LIMITS.maxDepth} exceeded, found ${n}.`],
] as const)('checkDocument: the %s limit (%i)', (_name, limit, build, code, message) => {
  test('when an operation is at the limit, then it is accepted', () => {
    expect(check(build(limit))).toHaveProperty('document');
  });

  test('when an operation is one over the limit, then one refusal naming the limit and its maximum, logged once at info', () => {
    expect(refusals(build(limit + 1))).toEqual([{ code, message: message(limit + 1) }]);
    expect(logged).toHaveLength(1);
    expect(logged[0].message).toBe('GraphQL operation refused by a query limit');
    expect(logged[0].object).toMatchObject({ queryLimit: { maximum: limit }, reason: message(limit + 1) });
  });
});

describe('checkDocument: the rest of the check', () => {
  test('when Relay-style fragments nest 8 deep around fields 4 deep, then accepted: depth counts fields, not fragments', () => {
    const query = `{ petsConnection(first: 2) { edges { node { ...Row } } } } fragment Row on Pet { ...Name id ${'... on Pet { '.repeat(8)}status${' }'.repeat(8)} } fragment Name on Pet { name }`;
    expect(check(query)).toHaveProperty('document');
  });

  test('when an operation is accepted, then its price and a document without locations to run', () => {
    const result = check(`query Q($n: Int) { pets(limit: $n) { ${FULL_PET} } }`, { n: 100 }, 'Q');
    if (!('document' in result)) throw new Error(JSON.stringify(result));
    expect(result.price).toEqual({ cost: 400, calls: 1, mutations: 0 });
    expect(result.operationName).toBe('Q');
    expect(result.document.loc).toBeUndefined();
  });

  test('when lists add up to exactly the maximum cost, then accepted; one list entry more, refused with the price', () => {
    expect(check(pricedLists([100, 100, QUERY_LIMITS.maxCost / 4 - 200]))).toHaveProperty('price', { cost: 1000, calls: 3, mutations: 0 });
    expect(refusals(pricedLists([100, 100, QUERY_LIMITS.maxCost / 4 - 199]))).toEqual([{ code: 'GRAPHQL_VALIDATION_FAILED', message: overCost(1004) }]);
    expect(logged.map((line) => line.object)).toEqual([{ queryLimit: { limit: 'cost', maximum: 1000, found: 1004 }, cost: 1004, reason: overCost(1004) }]);
  });

  test.each([
    ['lookups by id', (i: number) => `p${i}: pet(id: "1") { ${FULL_PET} }`],
    ['one-pet lists', (i: number) => `l${i}: pets(limit: 1) { id }`],
  ])('when an operation holds maxCost / databaseFieldMinCost %s, then accepted; one more, refused', (_case, field) => {
    const most = QUERY_LIMITS.maxCost / QUERY_LIMITS.databaseFieldMinCost;
    const operation = (n: number) => `{ ${Array.from({ length: n }, (_, i) => field(i)).join(' ')} }`;
    expect(check(operation(most))).toHaveProperty('price.cost', 1000);
    expect(refusals(operation(most + 1))).toEqual([{ code: 'GRAPHQL_VALIDATION_FAILED', message: overCost(1100) }]);
  });

  test('when a document does not parse, then GRAPHQL_PARSE_FAILED with the syntax error', () => {
    expect(refusals('{ pets { id }')).toEqual([{ code: 'GRAPHQL_PARSE_FAILED', message: 'Syntax Error: Expected Name, found <EOF>.' }]);
    expect(logged).toEqual([]);
  });

  test('when a document names a field the schema lacks, then GRAPHQL_VALIDATION_FAILED, not logged as a limit', () => {
    expect(refusals('{ petz { id } }')).toEqual([
      { code: 'GRAPHQL_VALIDATION_FAILED', message: 'Cannot query field "petz" on type "Query". Did you mean "pet" or "pets"?' },
    ]);
    expect(logged).toEqual([]);
  });

  test('when fragments refer to each other in a cycle, then GRAPHQL_VALIDATION_FAILED', () => {
    const result = refusals('query { ...A } fragment A on Query { ...B } fragment B on Query { ...A }');
    expect(result.map((refusal) => refusal.code)).toContain('GRAPHQL_VALIDATION_FAILED');
    expect(result.map((refusal) => refusal.message)).toContain('Cannot spread fragment "A" within itself via "B".');
  });

  test('when two operations are sent without a name, then OPERATION_RESOLUTION_FAILURE', () => {
    expect(refusals('query A { __typename } query B { __typename }')).toEqual([
      { code: 'OPERATION_RESOLUTION_FAILURE', message: 'The operation to run could not be determined.' },
    ]);
  });

  test('when the operation is not of the type this path runs, then GRAPHQL_VALIDATION_FAILED with its message', () => {
    expect(refusals('mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } }')).toEqual([
      { code: 'GRAPHQL_VALIDATION_FAILED', message: 'Only queries here.' },
    ]);
  });

  test('when a variable does not coerce, then BAD_USER_INPUT with graphql-js message', () => {
    expect(refusals('query ($n: Int) { pets(limit: $n) { id } }', { n: 'ten' })).toEqual([
      { code: 'BAD_USER_INPUT', message: 'Variable "$n" got invalid value "ten"; Int cannot represent non-integer value: "ten"' },
    ]);
  });

  test('when two creates are sent to a mutation path, then the mutation limit refuses them, logged with their cost', () => {
    const result = checkDocument(
      schema,
      RULES,
      { query: 'mutation { a: createPet(input: { name: "A", categoryId: 1 }) { id } b: createPet(input: { name: "B", categoryId: 1 }) { id } }' },
      log,
      { operation: OperationTypeNode.MUTATION, message: 'Only mutations here.' },
    );
    expect(result).toEqual({ refusals: [{ code: 'GRAPHQL_VALIDATION_FAILED', message: 'The operation runs 2 mutation fields; the maximum is 1.' }] });
    expect(logged.map((line) => line.object)).toEqual([
      { queryLimit: { limit: 'mutations', maximum: 1, found: 2 }, cost: 200, reason: 'The operation runs 2 mutation fields; the maximum is 1.' },
    ]);
  });

  test('when 1000 aliases of the biggest list are sent, then the token limit refuses it before anything is priced', () => {
    const query = `{ ${Array.from({ length: 1000 }, (_, i) => `a${i}: pets(limit: 100) { id }`).join(' ')} }`;
    expect(refusals(query)).toEqual([{ code: 'GRAPHQL_PARSE_FAILED', message: 'Syntax Error: Document contains more that 1000 tokens. Parsing aborted.' }]);
    expect(logged[0].object).toEqual({
      queryLimit: { limit: 'tokens', maximum: 1000 },
      reason: 'Syntax Error: Document contains more that 1000 tokens. Parsing aborted.',
    });
  });

  test('when fragments multiply past maxPricedSelections, then refused as unpriceable rather than run', () => {
    const query = `{ ...A } fragment A on Query { ${'...B '.repeat(200)}} fragment B on Query { pets(limit: 100) { ${FULL_PET} } ${'__typename '.repeat(200)}}`;
    expect(refusals(query)).toEqual([
      { code: 'GRAPHQL_VALIDATION_FAILED', message: 'Query cannot be priced: with its fragments expanded it holds more than 10,000 selections.' },
    ]);
    expect(logged[0].object).toEqual({
      queryLimit: { limit: 'selections', maximum: 10_000 },
      reason: 'Query cannot be priced: with its fragments expanded it holds more than 10,000 selections.',
    });
  });
});

describe('unpriceableRefusal and PARSE_OPTIONS', () => {
  test('when built, then a 400 QueryLimitError of the selections limit', () => {
    expect(unpriceableRefusal().toBody()).toEqual({
      code: 'GRAPHQL_VALIDATION_FAILED',
      status: 400,
      message: 'Query cannot be priced: with its fragments expanded it holds more than 10,000 selections.',
    });
  });

  test('when read, then the parse options carry the token limit and are frozen', () => {
    expect(PARSE_OPTIONS).toEqual({ maxTokens: QUERY_LIMITS.maxTokens });
    expect(Object.isFrozen(PARSE_OPTIONS)).toBe(true);
  });
});
