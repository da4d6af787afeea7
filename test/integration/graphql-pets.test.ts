import { createLogger } from '../../src/observability/logger';
import { answerOf, countPets, createPet, graphql, request, startTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
/** Log lines at warn and above: what the service reports as unexpected. */
const warnings: Array<Record<string, unknown>> = [];
beforeAll(async () => {
  t = await startTestApp({ observe: { logger: createLogger('warn', { write: (line) => void warnings.push(JSON.parse(line)) }) } });
});
afterAll(() => t.close());
beforeEach(() => t.clearPets());

const PET_FIELDS = 'id name categoryId status';
const LIST = `query List($limit: Int, $status: PetStatus) { pets(limit: $limit, status: $status) { ${PET_FIELDS} } }`;
const GET = `query Get($id: ID!) { pet(id: $id) { ${PET_FIELDS} } }`;
const CREATE = `mutation Create($input: NewPetInput!) { createPet(input: $input) { ${PET_FIELDS} } }`;

/**
 * The two response formats of GraphQL over HTTP and the status of a request error (parse,
 * validation, variables) in each: docs/graphql.md.
 */
const REQUEST_ERROR_STATUS_BY_ACCEPT = [
  ['application/json', 200],
  ['application/graphql-response+json', 400],
] as const;

/** The one error of a GraphQL response, checked to carry only a catalogue code. */
function onlyError(body: any): { message: string; code: string } {
  expect(body.errors).toHaveLength(1);
  const [error] = body.errors;
  expect(Object.keys(error.extensions)).toEqual(['code']);
  expect(JSON.stringify(error)).not.toMatch(/stacktrace|at .*\.(ts|js):\d+|SELECT|INSERT/i);
  return { message: error.message, code: error.extensions.code };
}

describe('createPet', () => {
  test('when the input is valid, then the Pet with an ID string and a SafeInt categoryId', async () => {
    const result = await graphql(t, CREATE, { input: { name: 'Rex', categoryId: 3, status: 'pending' } });
    expect(result.status).toBe(200);
    expect(result.body.errors).toBeUndefined();
    expect(result.body.data.createPet).toEqual({ id: expect.stringMatching(/^[1-9][0-9]*$/), name: 'Rex', categoryId: 3, status: 'pending' });
  });

  test('when status is omitted, then it is available', async () => {
    const result = await graphql(t, CREATE, { input: { name: 'Tom', categoryId: 2 } });
    expect(result.body.data.createPet.status).toBe('available');
  });

  test.each([
    ['a missing categoryId', { name: 'Rex' }],
    ['categoryId as a string', { name: 'Rex', categoryId: '7' }],
    ['categoryId 1.5', { name: 'Rex', categoryId: 1.5 }],
    ['categoryId beyond 2^53-1', { name: 'Rex', categoryId: 9007199254740992 }],
    ['an unknown status', { name: 'Rex', categoryId: 1, status: 'lost' }],
    ['status null', { name: 'Rex', categoryId: 1, status: null }],
    ['a client-chosen id', { id: '5', name: 'Rex', categoryId: 1 }],
    ['name not a string', { name: 42, categoryId: 1 }],
  ])(
    'when the variables hold %s, then BAD_USER_INPUT, no data, nothing stored (200 for application/json, 400 for graphql-response+json)',
    async (_case, input) => {
      for (const [accept, status] of REQUEST_ERROR_STATUS_BY_ACCEPT) {
        const result = await graphql(t, CREATE, { input }, { accept });
        expect({ accept, status: result.status }).toEqual({ accept, status });
        expect(onlyError(result.body).code).toBe('BAD_USER_INPUT');
        expect(result.body.data).toBeUndefined();
      }
      expect(await countPets(t)).toBe(0);
    },
  );

  test.each([
    ['a blank name', { name: '  ', categoryId: 1 }],
    ['a name of 101 characters', { name: 'x'.repeat(101), categoryId: 1 }],
    ['categoryId 0', { name: 'Rex', categoryId: 0 }],
  ])('when the input has %s, then BAD_USER_INPUT from the shared rules, nothing stored', async (_case, input) => {
    const result = await graphql(t, CREATE, { input });
    expect(result.status).toBe(200); // GraphQL over HTTP: execution errors travel in a 200
    expect(onlyError(result.body).code).toBe('BAD_USER_INPUT');
    expect(result.body.data).toBeNull();
    expect(await countPets(t)).toBe(0);
  });
});

describe('pets', () => {
  test('when no limit is given, then 20 pets at most, ascending id', async () => {
    for (let i = 0; i < 21; i++) await createPet(t, { name: `Pet ${i}` });
    const result = await graphql(t, LIST);
    const ids = result.body.data.pets.map((pet: { id: string }) => Number(pet.id));
    expect(ids).toHaveLength(20);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  test('when status is given, then only those pets', async () => {
    await createPet(t, { status: 'sold' });
    const pending = await createPet(t, { status: 'pending' });
    const result = await graphql(t, LIST, { status: 'pending' });
    expect(result.body.data.pets).toEqual([{ ...pending, id: String(pending.id) }]);
  });

  test.each([0, 101, -5])('when limit is %s, then BAD_USER_INPUT', async (limit) => {
    const result = await graphql(t, LIST, { limit });
    expect(onlyError(result.body).code).toBe('BAD_USER_INPUT');
  });

  test.each(REQUEST_ERROR_STATUS_BY_ACCEPT)('when the status filter is unknown and Accept is %s, then HTTP %i BAD_USER_INPUT', async (accept, status) => {
    const result = await graphql(t, LIST, { status: 'lost' }, { accept });
    expect(result.status).toBe(status);
    expect(onlyError(result.body).code).toBe('BAD_USER_INPUT');
  });
});

describe('pet (deprecated)', () => {
  test('when the pet exists, then it is returned', async () => {
    const pet = await createPet(t, { name: 'Kitty' });
    const result = await graphql(t, GET, { id: String(pet.id) });
    expect(result.body.data.pet).toEqual({ ...pet, id: String(pet.id) });
  });

  test('when the id is an Int literal, then it is accepted as an ID', async () => {
    const pet = await createPet(t);
    const result = await graphql(t, `{ pet(id: ${pet.id}) { id } }`);
    expect(result.body.data.pet).toEqual({ id: String(pet.id) });
  });

  test('when the pet does not exist, then null without an error', async () => {
    const result = await graphql(t, GET, { id: '987654321' });
    expect(answerOf(result.body)).toEqual({ data: { pet: null } });
  });

  test.each(['abc', '0', '-1', '9007199254740992'])('when the id is %s, then BAD_USER_INPUT', async (id) => {
    const result = await graphql(t, GET, { id });
    expect(onlyError(result.body).code).toBe('BAD_USER_INPUT');
  });

  test('when the schema is introspected, then the field is deprecated naming pets(status:) and 2030-12-05', async () => {
    const result = await graphql(t, '{ __type(name: "Query") { fields(includeDeprecated: true) { name isDeprecated deprecationReason } } }');
    const field = result.body.data.__type.fields.find((f: { name: string }) => f.name === 'pet');
    expect(field.isDeprecated).toBe(true);
    expect(field.deprecationReason).toContain('pets(status:)');
    expect(field.deprecationReason).toContain('2030-12-05');
  });
});

describe('authentication and transport', () => {
  test.each([
    ['no key', null],
    ['an unknown key', 'pst_nope'],
  ])('when the request has %s, then HTTP 401 with UNAUTHENTICATED and WWW-Authenticate', async (_case, apiKey) => {
    const result = await graphql(t, CREATE, { input: { name: 'Rex', categoryId: 1 } }, { apiKey });
    expect(result.status).toBe(401);
    expect(result.headers.get('www-authenticate')).toMatch(/^Bearer realm="pet-store"/);
    expect(onlyError(result.body).code).toBe('UNAUTHENTICATED');
    expect(await countPets(t)).toBe(0);
  });

  test('when a query is sent with GET, then it runs', async () => {
    await createPet(t);
    const result = await request(t, 'GET', `/graphql?query=${encodeURIComponent('{ pets { name } }')}`, {
      headers: { 'apollo-require-preflight': 'true' },
    });
    expect(result.status).toBe(200);
    expect(result.body.data.pets).toEqual([{ name: 'Rex' }]);
  });

  test('when a mutation is sent with GET, then it is refused and nothing is stored', async () => {
    const query = encodeURIComponent('mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } }');
    const result = await request(t, 'GET', `/graphql?query=${query}`, { headers: { 'apollo-require-preflight': 'true' } });
    expect(result.status).toBe(405);
    expect(await countPets(t)).toBe(0);
  });

  test.each(
    REQUEST_ERROR_STATUS_BY_ACCEPT.flatMap(([accept, status]) => [
      ['a syntax error', '{ pets { id ', 'GRAPHQL_PARSE_FAILED', accept, status] as const,
      ['an unknown field', '{ pets { colour } }', 'GRAPHQL_VALIDATION_FAILED', accept, status] as const,
    ]),
  )('when the document has %s (%s), then %s, with Accept %s HTTP %i', async (_case, query, code, accept, status) => {
    const result = await graphql(t, query, undefined, { accept });
    expect(result.status).toBe(status);
    expect(onlyError(result.body).code).toBe(code);
    expect(result.body.data).toBeUndefined();
  });

  test.each([
    ['POST', 'subscription { petCreated { id } }'],
    ['POST', 'query Q { pets { id } } subscription S { petCreated { id } }'],
    ['GET', 'subscription { petCreated { id } }'],
  ])(
    'when a subscription operation is sent with %s (%s), then HTTP 400 GRAPHQL_VALIDATION_FAILED (graphql-response+json) and nothing is logged as unexpected',
    async (method, query) => {
      warnings.length = 0;
      const accept = 'application/graphql-response+json';
      const result =
        method === 'POST'
          ? await request(t, 'POST', '/graphql', { body: { query, operationName: query.startsWith('query Q') ? 'Q' : undefined }, headers: { accept } })
          : await request(t, 'GET', `/graphql?query=${encodeURIComponent(query)}`, { headers: { accept } });
      expect(result.status).toBe(400);
      const { code, message } = onlyError(result.body);
      expect(code).toBe('GRAPHQL_VALIDATION_FAILED');
      expect(message).toMatch(/subscription/i);
      expect(message).toMatch(/WebSocket on \/graphql/);
      expect(warnings).toEqual([]);
    },
  );

  test.each<[string, string, Record<string, string>, number, string]>([
    [
      'a mutation over GET',
      `/graphql?query=${encodeURIComponent('mutation { createPet(input: {name: "R", categoryId: 1}) { id } }')}`,
      { 'apollo-require-preflight': '1' },
      405,
      'METHOD_NOT_ALLOWED',
    ],
    [
      'an Accept header without JSON',
      `/graphql?query=${encodeURIComponent('{ pets { id } }')}`,
      { 'apollo-require-preflight': '1', accept: 'text/csv' },
      406,
      'NOT_ACCEPTABLE',
    ],
    [
      'a GET with a form Content-Type (CSRF prevention)',
      `/graphql?query=${encodeURIComponent('{ pets { id } }')}`,
      { 'content-type': 'text/plain' },
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    ],
  ])('when Apollo refuses %s, then the HTTP status and extensions.code agree with the catalogue', async (_case, path, headers, status, code) => {
    const result = await request(t, 'GET', path, { headers });
    expect(result.status).toBe(status);
    expect(onlyError(result.body).code).toBe(code);
  });

  test('when an automatic persisted query hash does not match its query, then 400 BAD_REQUEST', async () => {
    const result = await request(t, 'POST', '/graphql', {
      body: { query: '{ pets { id } }', extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } },
    });
    expect(result.status).toBe(400);
    expect(onlyError(result.body).code).toBe('BAD_REQUEST');
  });

  test('when the key has been revoked, then HTTP 401 UNAUTHENTICATED', async () => {
    const { apiKey, key } = await t.apiKeys.create('revoked-graphql');
    await t.apiKeys.revoke(apiKey.id);
    const result = await graphql(t, '{ pets { id } }', undefined, { apiKey: key });
    expect(result.status).toBe(401);
    expect(onlyError(result.body).code).toBe('UNAUTHENTICATED');
  });

  test('when a variable holds a number JSON.parse would round, then BAD_USER_INPUT and nothing is stored', async () => {
    const result = await request(t, 'POST', '/graphql', {
      body: '{"query":"mutation($c: SafeInt!) { createPet(input: {name: \\"R\\", categoryId: $c}) { id } }","variables":{"c":9007199254740991.4}}',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    });
    expect(result.status).toBe(400);
    expect(onlyError(result.body).code).toBe('BAD_USER_INPUT');
    expect(await countPets(t)).toBe(0);
  });

  test('when the body is not JSON, then HTTP 400 with BAD_REQUEST in a GraphQL error', async () => {
    const result = await request(t, 'POST', '/graphql', { body: '{"query":', headers: { 'content-type': 'application/json' } });
    expect(result.status).toBe(400);
    expect(onlyError(result.body).code).toBe('BAD_REQUEST');
  });

  test.each([
    ['a byte that is never UTF-8 (0xFF)', [0xff]],
    ['an overlong encoding of "/" (0xC0 0xAF)', [0xc0, 0xaf]],
    ['a truncated sequence (0xE2 0x82)', [0xe2, 0x82]],
    ['an encoded surrogate (0xED 0xA0 0x80)', [0xed, 0xa0, 0x80]],
  ])('when a variable holds %s, then HTTP 400 with BAD_REQUEST in a GraphQL error and nothing is stored', async (_case, bytes) => {
    const json = JSON.stringify({ query: CREATE, variables: { input: { name: 'Re@x', categoryId: 1 } } });
    const [before, after] = json.split('@');
    const body = Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)]);
    const result = await request(t, 'POST', '/graphql', { body, headers: { 'content-type': 'application/json' } });
    expect(result.status).toBe(400);
    expect(onlyError(result.body).code).toBe('BAD_REQUEST');
    expect(await countPets(t)).toBe(0);
  });

  test('when a variable holds an escaped unpaired surrogate, then BAD_USER_INPUT and nothing is stored', async () => {
    const body = `{"query":${JSON.stringify(CREATE)},"variables":{"input":{"name":"\\ud800","categoryId":1}}}`;
    const result = await request(t, 'POST', '/graphql', { body, headers: { 'content-type': 'application/json' } });
    expect(onlyError(result.body).code).toBe('BAD_USER_INPUT');
    expect(await countPets(t)).toBe(0);
  });
});
