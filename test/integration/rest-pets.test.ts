import { connect } from 'node:net';
import { In } from 'typeorm';
import { Pet } from '../../src/pets/pet.entity';
import { EXPECTED_DRIVER } from '../helpers/test-database';
import { countPets, createPet, request, startTestApp, type TestApp } from '../helpers/test-app';
import { HTTP_LIMITS } from '../../src/limits';

/** The largest REST request body the server reads. */
const REST_BODY_LIMIT = HTTP_LIMITS.restBodyBytes;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());
beforeEach(() => t.clearPets());

function expectError(result: { status: number; body: any; headers: Headers }, status: number, code: string) {
  expect(result.status).toBe(status);
  expect(result.headers.get('content-type')).toMatch(/^application\/json/);
  expect(result.body).toEqual({ code, message: expect.any(String), status });
  expect(result.body.message.length).toBeGreaterThan(0);
}

describe('the test setup', () => {
  test('when the suite runs, then the app uses the database the run asked for', () => {
    expect(t.dataSource.options.type).toBe(EXPECTED_DRIVER);
  });
});

describe('POST /v1/pets (createPet)', () => {
  test('when the body is a valid NewPet, then 201 with the Pet, a Location header and JSON', async () => {
    const result = await request(t, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 3, status: 'pending' } });
    expect(result.status).toBe(201);
    expect(result.headers.get('content-type')).toMatch(/^application\/json/);
    expect(result.body).toEqual({ id: expect.any(Number), name: 'Rex', categoryId: 3, status: 'pending' });
    expect(Number.isInteger(result.body.id)).toBe(true);
    expect(result.headers.get('location')).toBe(`/v1/pets/${result.body.id}`);
    const fetched = await request(t, 'GET', result.headers.get('location')!);
    expect(fetched.body).toEqual(result.body);
  });

  test('when status is omitted, then it defaults to available (never null)', async () => {
    const result = await request(t, 'POST', '/v1/pets', { body: { name: 'Tom', categoryId: 2 } });
    expect(result.status).toBe(201);
    expect(result.body.status).toBe('available');
  });

  test('when 40 creates arrive at once, half with an Idempotency-Key, then each gets 201 and its own id and is stored once', async () => {
    const names = Array.from({ length: 40 }, (_, i) => `Crowd ${i}`);
    const answers = await Promise.all(
      names.map((name, i) =>
        request(t, 'POST', '/v1/pets', { body: { name, categoryId: 1 }, headers: i % 2 === 0 ? { 'idempotency-key': `crowd-${i}-${Date.now()}` } : {} }),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(40).fill(201));
    expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(40);
    const stored = await t.dataSource.getRepository(Pet).findBy({ name: In(names) });
    expect(stored.map((pet) => pet.name).sort()).toEqual([...names].sort());
  });

  test.each(['available', 'pending', 'sold'])('when status is %s, then it is stored', async (status) => {
    const pet = await createPet(t, { status });
    expect((await request(t, 'GET', `/v1/pets/${pet.id}`)).body.status).toBe(status);
  });

  test('when name has 100 characters (astral ones count once) and categoryId is 2^53-1, then 201', async () => {
    const name = '🐕'.repeat(100);
    const result = await request(t, 'POST', '/v1/pets', { body: { name, categoryId: Number.MAX_SAFE_INTEGER } });
    expect(result.status).toBe(201);
    const fetched = await request(t, 'GET', `/v1/pets/${result.body.id}`);
    expect(fetched.body).toMatchObject({ name, categoryId: Number.MAX_SAFE_INTEGER });
  });

  const invalidBodies: Array<[string, string]> = [
    ['missing name', '{"categoryId":1}'],
    ['missing categoryId', '{"name":"Rex"}'],
    ['empty object', '{}'],
    ['name not a string', '{"name":42,"categoryId":1}'],
    ['name null', '{"name":null,"categoryId":1}'],
    ['blank name', '{"name":"   ","categoryId":1}'],
    ['empty name', '{"name":"","categoryId":1}'],
    ['name of 101 characters', JSON.stringify({ name: 'x'.repeat(101), categoryId: 1 })],
    ['categoryId as a string', '{"name":"Rex","categoryId":"7"}'],
    ['categoryId 1.5', '{"name":"Rex","categoryId":1.5}'],
    ['categoryId 0', '{"name":"Rex","categoryId":0}'],
    ['categoryId negative', '{"name":"Rex","categoryId":-3}'],
    ['categoryId 2^53', '{"name":"Rex","categoryId":9007199254740992}'],
    ['categoryId beyond 2^53, which JSON.parse would round', '{"name":"Rex","categoryId":9007199254740993}'],
    ['categoryId null', '{"name":"Rex","categoryId":null}'],
    ['unknown status', '{"name":"Rex","categoryId":1,"status":"lost"}'],
    ['status in another case', '{"name":"Rex","categoryId":1,"status":"Available"}'],
    ['status null', '{"name":"Rex","categoryId":1,"status":null}'],
    ['client-chosen id', '{"id":5,"name":"Rex","categoryId":1}'],
    ['a __proto__ key', '{"name":"Rex","categoryId":1,"__proto__":{"x":1}}'],
    ['a constructor key', '{"name":"Rex","categoryId":1,"constructor":{"prototype":{"x":1}}}'],
    ['a key named after an Object method', '{"name":"Rex","categoryId":1,"hasOwnProperty":1}'],
    ['categoryId with a fraction JSON.parse would round away', '{"name":"Rex","categoryId":9007199254740991.4}'],
    ['categoryId 1.0000000000000001', '{"name":"Rex","categoryId":1.0000000000000001}'],
    ['a name with a control character', '{"name":"Re\\u0000x","categoryId":1}'],
    ['a name with an unpaired surrogate', '{"name":"\\ud800","categoryId":1}'],
    ['unknown field', '{"name":"Rex","categoryId":1,"colour":"brown"}'],
    ['an array', '[{"name":"Rex","categoryId":1}]'],
    ['a string', '"Rex"'],
    ['a number', '7'],
    ['null', 'null'],
  ];
  // Prism (TEST_THROUGH_PRISM=1) re-parses what it forwards, so these bodies go straight to the server.
  const notVerbatimThroughPrism = new Set(['categoryId with a fraction JSON.parse would round away', 'categoryId 1.0000000000000001', 'a string', 'null']);
  test.each(invalidBodies)('when the body has %s, then 400 BAD_USER_INPUT and nothing is stored', async (_case, body) => {
    const direct = notVerbatimThroughPrism.has(_case);
    const result = await request(t, 'POST', '/v1/pets', { body, headers: { 'content-type': 'application/json' }, direct });
    expectError(result, 400, 'BAD_USER_INPUT');
    expect(await countPets(t)).toBe(0);
  });

  test('when a rule fails, then the message names the field', async () => {
    const result = await request(t, 'POST', '/v1/pets', { body: { name: 'Rex' } });
    expect(result.body.message).toMatch(/categoryId is required/);
  });

  test.each([
    ['malformed JSON', '{"name": "Rex",'],
    ['an empty JSON body', ''],
  ])('when the body is %s, then 400 BAD_REQUEST and nothing is stored', async (_case, body) => {
    // Prism answers unparsable JSON itself: straight to the server.
    const result = await request(t, 'POST', '/v1/pets', { body, headers: { 'content-type': 'application/json' }, direct: true });
    expectError(result, 400, 'BAD_REQUEST');
    expect(await countPets(t)).toBe(0);
  });

  // Bytes that are not UTF-8 must not be decoded to U+FFFD and stored (docs/decisions.md: "well-formed Unicode").
  const notUtf8: Array<[string, number[]]> = [
    ['a byte that is never UTF-8 (0xFF)', [0xff]],
    ['an overlong encoding of "/" (0xC0 0xAF)', [0xc0, 0xaf]],
    ['a truncated sequence (0xE2 0x82)', [0xe2, 0x82]],
    ['an encoded surrogate (0xED 0xA0 0x80)', [0xed, 0xa0, 0x80]],
  ];
  test.each(notUtf8)('when the name holds %s, then 400 BAD_REQUEST and nothing is stored', async (_case, bytes) => {
    const body = Buffer.concat([Buffer.from('{"name":"Re'), Buffer.from(bytes), Buffer.from('x","categoryId":1}')]);
    const result = await request(t, 'POST', '/v1/pets', { body, headers: { 'content-type': 'application/json' }, direct: true });
    expectError(result, 400, 'BAD_REQUEST');
    expect(await countPets(t)).toBe(0);
  });

  test('when there is no body at all, then 400 BAD_USER_INPUT', async () => {
    expectError(await request(t, 'POST', '/v1/pets'), 400, 'BAD_USER_INPUT');
  });

  test.each(['text/plain', 'application/x-www-form-urlencoded', 'application/xml'])(
    'when the body is %s, then 415 UNSUPPORTED_MEDIA_TYPE and nothing is stored',
    async (type) => {
      const result = await request(t, 'POST', '/v1/pets', { body: 'name=Rex', headers: { 'content-type': type } });
      expectError(result, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(await countPets(t)).toBe(0);
    },
  );
});

describe('GET /v1/pets (listPets)', () => {
  test('when there are no pets, then 200 with an empty JSON array', async () => {
    const result = await request(t, 'GET', '/v1/pets');
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toMatch(/^application\/json/);
    expect(result.body).toEqual([]);
  });

  test('when no limit is given, then at most 20 pets in ascending id order', async () => {
    for (let i = 0; i < 22; i++) await createPet(t, { name: `Pet ${i}` });
    const result = await request(t, 'GET', '/v1/pets');
    expect(result.body).toHaveLength(20);
    const ids = result.body.map((pet: { id: number }) => pet.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(result.body[0]).toEqual({ id: expect.any(Number), name: 'Pet 0', categoryId: 1, status: 'available' });
  });

  test('when limit is 1 or 100, then that many at most', async () => {
    for (let i = 0; i < 3; i++) await createPet(t);
    expect((await request(t, 'GET', '/v1/pets?limit=1')).body).toHaveLength(1);
    expect((await request(t, 'GET', '/v1/pets?limit=100')).body).toHaveLength(3);
  });

  test('when status is given, then only pets with that status, in ascending id order', async () => {
    const sold1 = await createPet(t, { status: 'sold' });
    await createPet(t, { status: 'available' });
    const sold2 = await createPet(t, { status: 'sold' });
    await createPet(t, { status: 'pending' });
    const result = await request(t, 'GET', '/v1/pets?status=sold&limit=10');
    expect(result.status).toBe(200);
    expect(result.body).toEqual([sold1, sold2]);
  });

  test.each([
    ['limit=0'],
    ['limit=101'],
    ['limit=-1'],
    ['limit=abc'],
    ['limit=1.5'],
    ['limit='],
    ['limit=1e1'],
    ['limit=99999999999999999999'],
    ['limit=1&limit=2'],
    ['limit=010'],
    ['isPrototypeOf=1'],
    ['__proto__=1'],
    ['constructor=1'],
    ['status=lost'],
    ['status=SOLD'],
    ['status='],
    ['offset=5'],
  ])('when the query is ?%s, then 400 BAD_USER_INPUT', async (query) => {
    // Prism drops a __proto__ query key: straight to the server.
    expectError(await request(t, 'GET', `/v1/pets?${query}`, { direct: query.startsWith('__proto__') }), 400, 'BAD_USER_INPUT');
  });
});

describe('GET /v1/pets/{petId} (getPet, deprecated)', () => {
  function expectDeprecationHeaders(headers: Headers) {
    expect(headers.get('deprecation')).toMatch(/^@\d+$/);
    expect(Number(headers.get('deprecation')!.slice(1))).toBeLessThan(Date.parse('2030-12-05T00:00:00Z') / 1000);
    expect(headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
    expect(headers.get('link')).toBe('</v1/pets>; rel="successor-version"');
  }

  test('when the pet exists, then 200 with the Pet and the deprecation headers', async () => {
    const pet = await createPet(t, { name: 'Kitty', categoryId: 9, status: 'sold' });
    const result = await request(t, 'GET', `/v1/pets/${pet.id}`);
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toMatch(/^application\/json/);
    expect(result.body).toEqual({ id: pet.id, name: 'Kitty', categoryId: 9, status: 'sold' });
    expectDeprecationHeaders(result.headers);
  });

  test('when the pet does not exist, then 404 NOT_FOUND with the deprecation headers', async () => {
    const result = await request(t, 'GET', '/v1/pets/987654321');
    expectError(result, 404, 'NOT_FOUND');
    expectDeprecationHeaders(result.headers);
  });

  test('when the key is missing, then 401 with the deprecation headers', async () => {
    const result = await request(t, 'GET', '/v1/pets/1', { apiKey: null });
    expectError(result, 401, 'UNAUTHENTICATED');
    expectDeprecationHeaders(result.headers);
  });

  test.each(['abc', '0', '-1', '1.5', '01', '9007199254740992', '99999999999999999999', '%20'])(
    'when petId is %s, then 400 BAD_USER_INPUT with the deprecation headers',
    async (petId) => {
      const result = await request(t, 'GET', `/v1/pets/${petId}`);
      expectError(result, 400, 'BAD_USER_INPUT');
      expectDeprecationHeaders(result.headers);
    },
  );
});

describe('authentication (every operation)', () => {
  const operations: Array<[string, string, unknown]> = [
    ['GET', '/v1/pets', undefined],
    ['POST', '/v1/pets', { name: 'Rex', categoryId: 1 }],
    ['GET', '/v1/pets/1', undefined],
  ];
  const badCredentials: Array<[string, Record<string, string>, string]> = [
    ['no Authorization header', {}, 'Bearer realm="pet-store"'],
    ['another scheme', { authorization: 'Basic dXNlcjpwYXNz' }, 'Bearer realm="pet-store", error="invalid_token"'],
    ['Bearer without a token', { authorization: 'Bearer ' }, 'Bearer realm="pet-store", error="invalid_token"'],
    ['a malformed token', { authorization: 'Bearer a b' }, 'Bearer realm="pet-store", error="invalid_token"'],
    ['an unknown key', { authorization: 'Bearer pst_unknownkeyunknownkeyunknownkey' }, 'Bearer realm="pet-store", error="invalid_token"'],
  ];
  describe.each(operations)('%s %s', (method, path, body) => {
    test.each(badCredentials)('when the request has %s, then 401 UNAUTHENTICATED with WWW-Authenticate', async (_c, headers, challenge) => {
      const result = await request(t, method, path, { apiKey: null, headers, body });
      expectError(result, 401, 'UNAUTHENTICATED');
      expect(result.headers.get('www-authenticate')).toBe(challenge);
      expect(await countPets(t)).toBe(0);
    });
  });

  test('when the scheme is written in lower case, then the key is accepted (RFC 9110: case-insensitive)', async () => {
    const result = await request(t, 'GET', '/v1/pets', { apiKey: null, headers: { authorization: `bearer ${t.apiKey}` } });
    expect(result.status).toBe(200);
  });

  test('when the key is revoked, then 401 on the next request', async () => {
    const { apiKey, key } = await t.apiKeys.create('short-lived');
    expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
    await t.apiKeys.revoke(apiKey.id);
    expectError(await request(t, 'GET', '/v1/pets', { apiKey: key }), 401, 'UNAUTHENTICATED');
  });
});

describe('HTTP semantics', () => {
  test.each([
    ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
    ['PUT', '/v1/pets', 'GET, HEAD, POST'],
    ['PATCH', '/v1/pets/1', 'GET, HEAD'],
    ['POST', '/v1/pets/1', 'GET, HEAD'],
    ['DELETE', '/v1/pets/1', 'GET, HEAD'],
    ['PUT', '/graphql', 'GET, POST'],
    ['HEAD', '/graphql', 'GET, POST'],
    ['OPTIONS', '/v1/pets', 'GET, HEAD, POST'],
  ])('when %s %s, then 405 METHOD_NOT_ALLOWED with Allow: %s', async (method, path, allow) => {
    const result = await request(t, method, path);
    expect(result.status).toBe(405);
    expect(result.headers.get('allow')).toBe(allow);
    if (method === 'HEAD')
      expect(result.body).toBeUndefined(); // HEAD answers carry no body
    else if (path.startsWith('/v1')) expectError(result, 405, 'METHOD_NOT_ALLOWED');
    else expect(result.body.errors[0].extensions).toEqual({ code: 'METHOD_NOT_ALLOWED' });
  });

  describe(`the body limit, HTTP_LIMITS.restBodyBytes (${REST_BODY_LIMIT} bytes)`, () => {
    /** A NewPet of exactly `bytes` bytes, valid but for its name, which fills it out. */
    const bodyOfSize = (bytes: number) => JSON.stringify({ name: 'x'.repeat(bytes - '{"name":"","categoryId":1}'.length), categoryId: 1 });
    const headers = { 'content-type': 'application/json' };

    test('when the body is exactly the limit, then it is read and judged on its content: 400 for its name, not 413', async () => {
      const body = bodyOfSize(REST_BODY_LIMIT);
      expect(Buffer.byteLength(body)).toBe(REST_BODY_LIMIT);
      const result = await request(t, 'POST', '/v1/pets', { body, headers });
      expectError(result, 400, 'BAD_USER_INPUT');
      expect(result.body.message).toMatch(/\bname\b/);
      expect(await countPets(t)).toBe(0);
    });

    test('when the body is one byte over the limit, then 413 PAYLOAD_TOO_LARGE in the Error shape and nothing is stored', async () => {
      const body = bodyOfSize(REST_BODY_LIMIT + 1);
      expect(Buffer.byteLength(body)).toBe(REST_BODY_LIMIT + 1);
      expectError(await request(t, 'POST', '/v1/pets', { body, headers }), 413, 'PAYLOAD_TOO_LARGE');
      expect(await countPets(t)).toBe(0);
    });
  });

  test('when a petId is over 100 characters, then 414 URI_TOO_LONG in the Error shape (found by fuzzing)', async () => {
    expectError(await request(t, 'GET', `/v1/pets/${'1'.repeat(120)}`), 414, 'URI_TOO_LONG');
  });

  test('when the URL cannot be decoded, then 400 BAD_REQUEST in the Error shape', async () => {
    expectError(await request(t, 'GET', '/v1/pe%E0%A4%Ats'), 400, 'BAD_REQUEST');
  });

  test.each([
    ['a malformed Content-Length', 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, 'BAD_REQUEST'],
    ['headers over 16 KiB', `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`, 431, 'REQUEST_HEADER_FIELDS_TOO_LARGE'],
  ])('when Node cannot parse the request (%s), then %s in the Error shape', async (_case, raw, status, code) => {
    const { port } = new URL(t.url);
    const answer = await new Promise<string>((resolve, reject) => {
      let text = '';
      const socket = connect(Number(port), '127.0.0.1', () => socket.end(raw));
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ code, message: expect.any(String), status });
  });

  // (`/` is the landing page: test/landing-page.test.ts)
  test.each(['/v1', '/v1/pet', '/v2/pets', '/v1/pets/1/owner', '/store/orders'])('when the route %s does not exist, then 404 NOT_FOUND', async (path) => {
    expectError(await request(t, 'GET', path), 404, 'NOT_FOUND');
  });
});

describe('JSON bodies end with a newline (docs/rest.md)', () => {
  test.each([
    ['listPets', 'GET', '/v1/pets?limit=20', undefined, 200],
    ['createPet', 'POST', '/v1/pets', '{"name":"Rex","categoryId":1}', 201],
    ['an Error (400)', 'POST', '/v1/pets', '{"name":"Rex","categoryId":"7"}', 400],
    ['an unknown path (404)', 'GET', '/nowhere', undefined, 404],
    ['the health route', 'GET', '/healthz', undefined, 200],
    ['the OpenAPI document', 'GET', '/v1/openapi.json', undefined, 200],
    ['a GraphQL answer (Apollo ends it already)', 'POST', '/graphql', '{"query":"{ pets(limit: 1) { id } }"}', 200],
  ])(
    'when %s is answered, then the body ends with exactly one newline, counted by Content-Length, on GET and HEAD alike',
    async (_case, method, path, body, status) => {
      const headers = { authorization: `Bearer ${t.apiKey}`, ...(body && { 'content-type': 'application/json' }) };
      const response = await fetch(t.url + path, { method, headers, body });
      expect(response.status).toBe(status);
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(bytes.toString('utf8')).toMatch(/[}\]]\n$/);
      expect(Number(response.headers.get('content-length'))).toBe(bytes.length);
      // (a 404's message names the method, so its HEAD counts one byte more)
      if (method === 'GET' && status === 200) {
        const head = await fetch(t.url + path, { method: 'HEAD', headers });
        expect(head.headers.get('content-length')).toBe(String(bytes.length));
      }
    },
  );
});
