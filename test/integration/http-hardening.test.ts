import { buildApp } from '../../src/app';
import { createLogger } from '../../src/observability/logger';
import { isWellFormedApiKey } from '../../src/auth/api-key-policy';
import { ApiKeyService } from '../../src/auth/api-key.service';
import { openDatabase } from '../../src/database/open-database';
import { countPets, graphql, request, startTestApp, testConfig, type TestApp } from '../helpers/test-app';
import { HTTP_LIMITS } from '../../src/limits';

describe('HTTP hardening', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  test.each([
    // A page a key may keep but must revalidate (http/conditional-get.hook.ts); everything else, errors included, kept nowhere.
    ['GET', '/v1/pets', 'private, no-cache'],
    ['GET', '/v1/pets/1', 'no-store'],
    ['POST', '/graphql', 'no-store'],
    ['GET', '/v1/nope', 'no-store'],
  ])('when %s %s is answered, then Cache-Control: %s and X-Content-Type-Options: nosniff', async (method, path, cacheControl) => {
    const result = path === '/graphql' ? await graphql(t, '{ __typename }') : await request(t, method, path);
    expect(result.headers.get('cache-control')).toBe(cacheControl);
    expect(result.headers.get('x-content-type-options')).toBe('nosniff');
  });

  test.each([
    ['/v1/pets', HTTP_LIMITS.restBodyBytes],
    ['/graphql', HTTP_LIMITS.graphqlBodyBytes],
  ])('when a body to %s is at its limit, then it is read; one byte more, then 413 and nothing is stored', async (path, limit) => {
    const body = (size: number) => {
      const shell = path === '/graphql' ? { query: '{ __typename }', extensions: { pad: '' } } : { name: 'R', categoryId: 1, pad: '' };
      const padding = size - JSON.stringify(shell).length;
      return JSON.stringify(path === '/graphql' ? { ...shell, extensions: { pad: 'x'.repeat(padding) } } : { ...shell, pad: 'x'.repeat(padding) });
    };
    const headers = { 'content-type': 'application/json' };
    const atLimit = await request(t, 'POST', path, { body: body(limit), headers });
    expect(atLimit.status).not.toBe(413); // read, then judged on its content (REST: 400 for the unknown "pad")
    const over = await request(t, 'POST', path, { body: body(limit + 1), headers });
    expect(over.status).toBe(413);
    expect(path === '/graphql' ? over.body.errors[0].extensions.code : over.body.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await countPets(t)).toBe(0);
  });

  test('when CORS is not configured, then no browser origin is allowed and a preflight is refused', async () => {
    const simple = await request(t, 'GET', '/v1/pets', { headers: { origin: 'https://evil.example' } });
    expect(simple.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await request(t, 'OPTIONS', '/v1/pets', {
      apiKey: null,
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(405);
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    // What a developer reads in the browser's network panel: where origins are allowed.
    expect(preflight.body).toEqual({
      code: 'METHOD_NOT_ALLOWED',
      message: 'Cross-origin requests from https://evil.example are not allowed: add it to CORS_ORIGINS (comma-separated origins) to allow them.',
      status: 405,
    });
  });
});

describe('CORS with an allow-list', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { CORS_ORIGINS: 'https://app.example.com' } });
  });
  afterAll(() => t.close());

  test('when a listed origin sends a preflight, then it is allowed with the API headers', async () => {
    const preflight = await request(t, 'OPTIONS', '/v1/pets', {
      apiKey: null,
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Authorization/);
  });

  test('when a listed origin calls the API, then the answer names it and exposes Location', async () => {
    const result = await request(t, 'POST', '/v1/pets', { body: { name: 'R', categoryId: 1 }, headers: { origin: 'https://app.example.com' } });
    expect(result.status).toBe(201);
    expect(result.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(result.headers.get('access-control-expose-headers')).toMatch(/Location/);
    expect(result.headers.get('access-control-expose-headers')).toMatch(/Idempotent-Replayed/);
  });

  test('when another origin calls, then the answer allows no origin', async () => {
    const result = await request(t, 'GET', '/v1/pets', { headers: { origin: 'https://evil.example' } });
    expect(result.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('API keys', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  test('when a key is created, then it has the pst_sk_ prefix, 256 bits of secret and a checksum', () => {
    expect(t.apiKey).toMatch(/^pst_sk_[A-Za-z0-9_-]{49}$/);
    expect(isWellFormedApiKey(t.apiKey)).toBe(true);
  });

  test('when one character of a key is mistyped, then the checksum refuses it before the database is asked', async () => {
    const typo = t.apiKey.slice(0, 10) + (t.apiKey[10] === 'A' ? 'B' : 'A') + t.apiKey.slice(11);
    expect(isWellFormedApiKey(typo)).toBe(false);
    // With the key table gone, any lookup would fail with a 500: a clean 401 shows none was made.
    await t.dataSource.query('ALTER TABLE api_key RENAME TO api_key_away');
    try {
      const result = await request(t, 'GET', '/v1/pets', { apiKey: typo });
      expect(result.status).toBe(401);
      expect(result.body.code).toBe('UNAUTHENTICATED');
    } finally {
      await t.dataSource.query('ALTER TABLE api_key_away RENAME TO api_key');
    }
  });

  test('when a key is sent in another letter case, then it is refused', async () => {
    const swapped = t.apiKey.replace(/[a-z]/, (c) => c.toUpperCase());
    expect((await request(t, 'GET', '/v1/pets', { apiKey: swapped })).status).toBe(401);
  });
});

describe('logs', () => {
  test('when requests carry an API key, then no log line holds it, even at trace level', async () => {
    const lines: string[] = [];
    const database = await openDatabase({ type: 'sqlite', path: ':memory:' });
    const logger = createLogger('trace', { write: (line) => void lines.push(line) });
    const app = await buildApp({ config: testConfig({ LOG_LEVEL: 'trace' }), database, logger });
    try {
      const { key } = await new ApiKeyService(database).create('logged');
      const url = await app.listen({ port: 0, host: '127.0.0.1' });
      await fetch(`${url}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
      await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: '{"query":"{ pets { id } }"}',
      });
      await fetch(`${url}/v1/pets`, { headers: { authorization: `Bearer ${key.slice(0, -1)}x` } });
      expect(lines.length).toBeGreaterThan(3);
      expect(lines.join('\n')).not.toContain(key.slice(4, 40));
    } finally {
      await app.close();
      await database.close();
    }
  });
});
