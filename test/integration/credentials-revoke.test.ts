import { generateApiKey } from '../../src/auth/api-key-policy';
import { API_KEY_LIMITS, HTTP_LIMITS } from '../../src/limits';
import { REVOKE_CREDENTIALS_ANSWER } from '../../src/rest/credentials.controller';
import { type TestApp, request, startTestApp } from '../helpers/test-app';

/** `POST /v1/credentials/revoke` (docs/api-keys.md "Revocation"): anyone revokes a leaked key, and learns nothing else. */

const PATH = '/v1/credentials/revoke';
const revoke = (t: TestApp, body: unknown, headers?: Record<string, string>) => request(t, 'POST', PATH, { body, apiKey: null, headers });
const listPets = (t: TestApp, key: string) => request(t, 'GET', '/v1/pets', { apiKey: key });

describe('the credential revocation API', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { API_KEY_CACHE_SECONDS: '60' } });
  });
  afterAll(() => t.close());

  test('when a valid, an unknown and a malformed key are sent without any API key, then each gets the same 202 and body, and the valid one is refused at once', async () => {
    const { key } = await t.apiKeys.create('leaked');
    // Cached for a minute: only the revocation can refuse it now.
    expect((await listPets(t, key)).status).toBe(200);
    const answers = [];
    for (const credential of [key, generateApiKey(), 'pst_sk_not-a-key', 'hello']) {
      const answer = await revoke(t, { credentials: [credential] });
      answers.push({ status: answer.status, body: answer.body, type: answer.headers.get('content-type') });
      expect(answer.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
    }
    expect(answers).toEqual(Array(4).fill({ status: 202, body: REVOKE_CREDENTIALS_ANSWER, type: 'application/json; charset=utf-8' }));
    const refused = await listPets(t, key);
    expect(refused.status).toBe(401);
    expect(refused.body.code).toBe('UNAUTHENTICATED');
    // Sent again, already revoked: still the same answer.
    expect(await revoke(t, { credentials: [key, key] })).toMatchObject({ status: 202, body: REVOKE_CREDENTIALS_ANSWER });
  });

  test(`when ${API_KEY_LIMITS.maxRevokedPerRequest} keys are sent, active ones among unknown ones, then the active ones are revoked and the others stay`, async () => {
    const active = await Promise.all([1, 2, 3].map((i) => t.apiKeys.create(`many ${i}`)));
    const bystander = await t.apiKeys.create('bystander');
    const credentials = [...active.map(({ key }) => key), ...Array.from({ length: API_KEY_LIMITS.maxRevokedPerRequest - 3 }, () => generateApiKey())];
    expect((await revoke(t, { credentials })).status).toBe(202);
    for (const { key } of active) expect((await listPets(t, key)).status).toBe(401);
    expect((await listPets(t, bystander.key)).status).toBe(200);
  });

  describe('when the body is not {"credentials": [1 to 100 strings]}, then it is 400 BAD_USER_INPUT and nothing is revoked', () => {
    let victim: { key: string };
    beforeAll(async () => {
      victim = await t.apiKeys.create('victim');
    });
    const bad: Array<[string, unknown, RegExp]> = [
      ['an array', [() => victim.key], /expected an object, got an array/],
      ['a string', () => JSON.stringify(victim.key), /expected an object, got a string/],
      ['null', null, /expected an object, got null/],
      ['no credentials', {}, /credentials is required/],
      ['an extra field', () => ({ credentials: [victim.key], note: 'x' }), /property note should not exist/],
      ['a string for credentials', () => ({ credentials: victim.key }), /credentials must be an array/],
      ['a number among them', () => ({ credentials: [victim.key, 7] }), /each value in credentials must be a string/],
      ['an empty array', { credentials: [] }, /credentials must contain at least 1 elements/],
      [
        `${API_KEY_LIMITS.maxRevokedPerRequest + 1} keys`,
        () => ({ credentials: [victim.key, ...Array.from({ length: API_KEY_LIMITS.maxRevokedPerRequest }, () => generateApiKey())] }),
        /credentials must contain no more than 100 elements/,
      ],
    ];
    test.each(bad)('%s', async (_name, body, message) => {
      const value = typeof body === 'function' ? body() : Array.isArray(body) ? body.map((item) => (typeof item === 'function' ? item() : item)) : body;
      const answer = await request(t, 'POST', PATH, {
        body: value === null ? 'null' : value,
        apiKey: null,
        headers: { 'content-type': 'application/json' },
      });
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ code: 'BAD_USER_INPUT', message: expect.stringMatching(message), status: 400 });
      expect((await listPets(t, victim.key)).status).toBe(200);
    });

    test(`a body over the REST limit (${HTTP_LIMITS.restBodyBytes} bytes) is 413 PAYLOAD_TOO_LARGE, as on every REST route, and revokes nothing`, async () => {
      const answer = await revoke(t, { credentials: [victim.key, 'x'.repeat(HTTP_LIMITS.restBodyBytes)] });
      expect(answer.status).toBe(413);
      expect(answer.body.code).toBe('PAYLOAD_TOO_LARGE');
      expect((await listPets(t, victim.key)).status).toBe(200);
    });

    test('malformed JSON is 400 BAD_REQUEST and revokes nothing', async () => {
      const answer = await revoke(t, `{"credentials": ["${victim.key}"`, { 'content-type': 'application/json' });
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('BAD_REQUEST');
      expect((await listPets(t, victim.key)).status).toBe(200);
    });
  });

  test('when another method is used, then it is 405 with Allow: POST', async () => {
    const answer = await request(t, 'GET', PATH, { apiKey: null });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('POST');
  });
});

describe('the credential revocation API rate limit', () => {
  const QUOTA = 3;
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { RATE_LIMIT_UNAUTHENTICATED_MAX: String(QUOTA) } });
  });
  afterAll(() => t.close());

  test(`when an address has sent RATE_LIMIT_UNAUTHENTICATED_MAX (${QUOTA}) requests, then the next is 429 with Retry-After and revokes nothing`, async () => {
    const remaining: string[] = [];
    for (let i = 0; i < QUOTA; i++) {
      // A bad body is charged too: the address pays before the body is read.
      const answer = await revoke(t, i === 0 ? { credentials: [] } : { credentials: [generateApiKey()] });
      expect(answer.status).toBe(i === 0 ? 400 : 202);
      expect(answer.headers.get('ratelimit-policy')).toBe(`"default";q=${QUOTA};w=60`);
      remaining.push(answer.headers.get('ratelimit')!.split(';')[1]);
    }
    expect(remaining).toEqual(['r=2', 'r=1', 'r=0']);
    const { key } = await t.apiKeys.create('survivor');
    const limited = await revoke(t, { credentials: [key] });
    expect(limited.status).toBe(429);
    expect(limited.body.code).toBe('TOO_MANY_REQUESTS');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
    // The key's own budget is not the address's: it still works.
    expect((await listPets(t, key)).status).toBe(200);
  });
});
