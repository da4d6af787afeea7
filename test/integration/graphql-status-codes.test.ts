import { answersLegacyJson } from '../../src/graphql/legacy-json-status.plugin';
import { countPets, request, startTestApp, type HttpResult, type TestApp } from '../helpers/test-app';
import { HTTP_LIMITS, QUERY_LIMITS } from '../../src/limits';

/*
 * docs/graphql.md "Status codes": the HTTP status of each kind of GraphQL error, for both response formats of
 * GraphQL over HTTP. A request error (parse, validation, variables, no operation to run) is 200
 * in the legacy application/json format and 400 in application/graphql-response+json; every
 * other refusal keeps its status whatever the Accept.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const JSON_TYPE = 'application/json';
const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json';
const BOTH = [JSON_TYPE, GRAPHQL_RESPONSE_TYPE] as const;

/** POSTs `body` as JSON with this Accept (none when undefined: fetch then sends a bare wildcard). */
function post(body: unknown, accept: string | undefined, init: { apiKey?: string | null; headers?: Record<string, string> } = {}): Promise<HttpResult> {
  return request(t, 'POST', '/graphql', {
    body: typeof body === 'string' ? body : JSON.stringify(body),
    apiKey: init.apiKey,
    headers: { 'content-type': 'application/json', ...(accept !== undefined && { accept }), ...init.headers },
  });
}

/** The media type of a response, without parameters. */
const essence = (result: HttpResult) => (result.headers.get('content-type') ?? '').split(';')[0].trim();

/** The one error of a response, with its code; `data` is absent (nothing ran). */
function requestError(result: HttpResult): { code: string; message: string } {
  expect(result.body.data).toBeUndefined();
  expect(result.body.errors).toHaveLength(1);
  return { code: result.body.errors[0].extensions.code, message: result.body.errors[0].message };
}

describe('GraphQL request errors: the status follows the response format', () => {
  const REQUEST_ERRORS: Array<[string, Record<string, unknown>, string]> = [
    ['a document that does not parse', { query: '{ pets { id ' }, 'GRAPHQL_PARSE_FAILED'],
    ['a field the schema lacks', { query: '{ pets { colour } }' }, 'GRAPHQL_VALIDATION_FAILED'],
    ['a subscription (refused over HTTP)', { query: 'subscription { petCreated { id } }' }, 'GRAPHQL_VALIDATION_FAILED'],
    ['a variable of the wrong type', { query: 'query($n: Int) { pets(limit: $n) { id } }', variables: { n: 'ten' } }, 'BAD_USER_INPUT'],
    ['a required variable missing', { query: 'query($n: Int!) { pets(limit: $n) { id } }' }, 'BAD_USER_INPUT'],
    ['an operationName the document lacks', { query: 'query A { pets { id } }', operationName: 'B' }, 'OPERATION_RESOLUTION_FAILURE'],
    ['two operations and no operationName', { query: 'query A { pets { id } } query B { pets { name } }' }, 'OPERATION_RESOLUTION_FAILURE'],
  ];

  test.each(REQUEST_ERRORS.flatMap(([label, body, code]) => BOTH.map((accept) => [label, code, accept, body] as const)))(
    'when a POST holds %s, then %s, and with Accept %s the status of that format',
    async (_label, code, accept, body) => {
      const result = await post(body, accept);
      expect(requestError(result).code).toBe(code);
      expect(essence(result)).toBe(accept);
      expect(result.status).toBe(accept === JSON_TYPE ? 200 : 400);
    },
  );

  test.each(BOTH)('when a GET holds a document that does not parse, with Accept %s, then the status of that format', async (accept) => {
    const result = await request(t, 'GET', `/graphql?query=${encodeURIComponent('{ pets')}`, { headers: { accept } });
    expect(requestError(result).code).toBe('GRAPHQL_PARSE_FAILED');
    expect(result.status).toBe(accept === JSON_TYPE ? 200 : 400);
  });

  // What clients send: none (curl without -H, fetch's default), their own lists, and some edge cases.
  test.each([
    ['no Accept (fetch sends */*)', undefined],
    ['*/*', '*/*'],
    ['application/*', 'application/*'],
    ['Apollo Client 4', 'application/graphql-response+json,application/json;q=0.9'],
    ['urql 6', 'application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed'],
    ['graphql-request 7', 'application/graphql-response+json, application/json'],
    ['JSON first, same quality', 'application/json, application/graphql-response+json'],
    ['JSON preferred by quality', 'application/graphql-response+json;q=0.5, application/json'],
    ['JSON with a charset', 'application/json; charset=utf-8'],
    ['a text/html browser list', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
  ])('when Accept is %s, then a parse error is 200 exactly when the answer is application/json, else 400', async (_client, accept) => {
    const result = await post({ query: '{' }, accept);
    expect(requestError(result).code).toBe('GRAPHQL_PARSE_FAILED');
    expect({ type: essence(result), status: result.status }).toEqual(
      essence(result) === JSON_TYPE ? { type: JSON_TYPE, status: 200 } : { type: GRAPHQL_RESPONSE_TYPE, status: 400 },
    );
    // The plugin's own reading of Accept agrees with the type Apollo chose.
    expect(answersLegacyJson(accept ?? '*/*')).toBe(essence(result) === JSON_TYPE);
  });

  test('when Accept allows neither JSON type, then 406 NOT_ACCEPTABLE, also for a request error', async () => {
    const result = await post({ query: '{' }, 'text/csv');
    expect(result.status).toBe(406);
    expect(result.body.errors[0].extensions.code).toBe('NOT_ACCEPTABLE');
    expect(answersLegacyJson('text/csv')).toBe(false);
  });
});

describe('every other refusal keeps its status whatever the Accept', () => {
  // One field deeper than the limit: __type, fields, type, then ofType down to name.
  const deep = `{ __type(name: "Pet") { fields { type { ${'ofType { '.repeat(QUERY_LIMITS.maxDepth - 3)}name${' }'.repeat(QUERY_LIMITS.maxDepth - 3)} } } } }`;
  const costly = `{ ${Array.from({ length: 3 }, (_, i) => `a${i}: pets(limit: 100) { id name categoryId status }`).join(' ')} }`;
  const manyTokens = `{ ${'__typename '.repeat(QUERY_LIMITS.maxTokens)}}`;
  const twoCreates = 'mutation { a: createPet(input: {name: "A", categoryId: 1}) { id } b: createPet(input: {name: "B", categoryId: 1}) { id } }';

  test.each(
    [
      ['the depth limit', deep, 'GRAPHQL_VALIDATION_FAILED', `Query depth limit of ${QUERY_LIMITS.maxDepth} exceeded, found ${QUERY_LIMITS.maxDepth + 1}.`],
      ['the cost limit', costly, 'GRAPHQL_VALIDATION_FAILED', 'Query cost 1,200 exceeds the maximum of 1,000.'],
      ['the token limit', manyTokens, 'GRAPHQL_PARSE_FAILED', `Syntax Error: Document contains more that ${QUERY_LIMITS.maxTokens} tokens. Parsing aborted.`],
      ['the one-create limit', twoCreates, 'GRAPHQL_VALIDATION_FAILED', 'The operation runs 2 mutation fields; the maximum is 1.'],
    ].flatMap(([label, query, code, message]) => BOTH.map((accept) => [label, code, accept, query, message] as const)),
  )('when an operation is over %s, then 400 %s naming the limit with Accept %s, and nothing runs', async (_label, code, accept, query, message) => {
    const before = await countPets(t);
    const result = await post({ query }, accept);
    expect(result.status).toBe(400);
    expect(requestError(result)).toEqual({ code, message });
    expect(await countPets(t)).toBe(before);
  });

  test.each(BOTH)(
    'when Accept is %s, then a missing key is 401, a non-JSON body 415, malformed JSON 400 and a body too large 413, each in that media type',
    async (accept) => {
      const unauthenticated = await post({ query: '{' }, accept, { apiKey: null });
      expect([unauthenticated.status, unauthenticated.body.errors[0].extensions.code, essence(unauthenticated)]).toEqual([401, 'UNAUTHENTICATED', accept]);
      const notJson = await post('{"query":"{"}', accept, { headers: { 'content-type': 'text/plain' } });
      expect([notJson.status, notJson.body.errors[0].extensions.code, essence(notJson)]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE', accept]);
      const malformed = await post('{"query": ', accept);
      expect([malformed.status, malformed.body.errors[0].extensions.code, essence(malformed)]).toEqual([400, 'BAD_REQUEST', accept]);
      const tooLarge = await post({ query: `{ __typename } #${'x'.repeat(HTTP_LIMITS.graphqlBodyBytes)}` }, accept);
      expect([tooLarge.status, tooLarge.body.errors[0].extensions.code, essence(tooLarge)]).toEqual([413, 'PAYLOAD_TOO_LARGE', accept]);
    },
  );

  test.each(BOTH)('when Accept is %s, then a request Apollo cannot read is 400 BAD_REQUEST and a mutation over GET 405', async (accept) => {
    const noQuery = await post({ qeury: '{ __typename }' }, accept);
    expect([noQuery.status, noQuery.body.errors[0].extensions.code]).toEqual([400, 'BAD_REQUEST']);
    const badVariables = await post({ query: '{ __typename }', variables: 'not an object' }, accept);
    expect([badVariables.status, badVariables.body.errors[0].extensions.code]).toEqual([400, 'BAD_REQUEST']);
    const getMutation = await request(t, 'GET', `/graphql?query=${encodeURIComponent('mutation { __typename }')}`, { headers: { accept } });
    expect([getMutation.status, getMutation.body.errors[0].extensions.code]).toEqual([405, 'METHOD_NOT_ALLOWED']);
  });

  test.each(BOTH)('when Accept is %s and a resolver refuses the input (a blank name), then 200 with data null: an execution error', async (accept) => {
    const result = await post({ query: 'mutation { createPet(input: {name: " ", categoryId: 1}) { id } }' }, accept);
    expect(result.status).toBe(200);
    expect(result.body.data).toBeNull();
    expect(result.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });
});

describe('the rate limit keeps 429 whatever the Accept', () => {
  let limited: TestApp;
  beforeAll(async () => {
    limited = await startTestApp({ env: { RATE_LIMIT_MAX: '3' } });
  });
  afterAll(() => limited.close());

  test.each(BOTH)('when an operation costs more requests than are left, with Accept %s, then 429 TOO_MANY_REQUESTS', async (accept) => {
    // Four lookups: 4 requests, of 3 per window.
    const result = await request(limited, 'POST', '/graphql', {
      body: { query: `{ ${['a', 'b', 'c', 'd'].map((alias) => `${alias}: pet(id: "1") { id }`).join(' ')} }` },
      headers: { accept },
    });
    expect(result.status).toBe(429);
    expect(result.body.errors[0].extensions.code).toBe('TOO_MANY_REQUESTS');
    // The error says when to come back, as the Retry-After header does.
    expect(result.body.errors[0].extensions.retryAfterSeconds).toBe(Number(result.headers.get('retry-after')));
    expect(result.body.errors[0].extensions.retryAfterSeconds).toBeGreaterThan(0);
  });
});

describe('a scope refusal keeps 403 whatever the Accept', () => {
  test.each(BOTH)('when a read-only key runs createPet with Accept %s, then 403 FORBIDDEN in that format and nothing is created', async (accept) => {
    const { key } = await t.apiKeys.create({ name: `read-only ${accept}`, scopes: ['pets:read'] });
    const pets = await countPets(t);
    const result = await post({ query: 'mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } }' }, accept, { apiKey: key });
    expect(result.status).toBe(403);
    expect(essence(result)).toBe(accept);
    expect(requestError(result).code).toBe('FORBIDDEN');
    expect(result.headers.get('www-authenticate')).toBe('Bearer realm="pet-store", error="insufficient_scope", scope="pets:write"');
    expect(await countPets(t)).toBe(pets);
  });
});
