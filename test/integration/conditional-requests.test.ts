import { seedPets } from '../../src/pets/pet.seed';
import { createPet, request, startTestApp, type TestApp, type HttpResult } from '../helpers/test-app';

/** What is left of the key's quota, from the `RateLimit` header: `"default";r=<remaining>;t=<s>`. */
const remainingOf = (result: HttpResult) => Number(/;r=(\d+);/.exec(result.headers.get('ratelimit') ?? '')?.[1]);

/**
 * GET (or HEAD) `path`, with `If-None-Match: ifNoneMatch` when given. Through Prism (npm run test:prism) a HEAD, or a
 * GET whose `Content-Length` is compared, goes straight to the app: Prism answers HEAD 500 and re-serialises bodies.
 */
const get = (t: TestApp, path: string, ifNoneMatch?: string, init: { method?: string; apiKey?: string | null; direct?: boolean } = {}) =>
  request(t, init.method ?? 'GET', path, {
    apiKey: init.apiKey,
    headers: ifNoneMatch === undefined ? {} : { 'if-none-match': ifNoneMatch },
    direct: init.direct ?? init.method === 'HEAD',
  });

/** RFC 9110 §8.8.3: a strong tag is a quoted string without `W/`. */
const STRONG_TAG = /^"[\x21\x23-\x7e]+"$/;

describe('ETag and If-None-Match (RFC 9110 §8.8.3, §13.1.2, §15.4.5)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());
  beforeEach(() => t.clearPets());

  test.each(['/v1/pets', '/v1/pets?limit=2', '/v1/pets?status=available', 'a pet'])(
    'when %s is read twice unchanged, then both 200s carry the same strong ETag, and HEAD the same one',
    async (which) => {
      const pets = [await createPet(t), await createPet(t), await createPet(t)];
      const path = which === 'a pet' ? `/v1/pets/${pets[0].id}` : which;
      const [first, second, head] = [await get(t, path), await get(t, path), await get(t, path, undefined, { method: 'HEAD' })];
      expect([first.status, second.status, head.status]).toEqual([200, 200, 200]);
      expect(first.headers.get('etag')).toMatch(STRONG_TAG);
      expect(second.headers.get('etag')).toBe(first.headers.get('etag'));
      expect(head.headers.get('etag')).toBe(first.headers.get('etag'));
      expect(first.headers.get('cache-control')).toBe('private, no-cache');
    },
  );

  test('when a create lands on a page, then its ETag changes; pages of other content have other ETags', async () => {
    await createPet(t, { name: 'Rex' });
    const before = (await get(t, '/v1/pets')).headers.get('etag');
    await createPet(t, { name: 'Whiskers' });
    const after = (await get(t, '/v1/pets')).headers.get('etag');
    expect(after).not.toBe(before);
    const others = [await get(t, '/v1/pets?limit=1'), await get(t, '/v1/pets?status=sold')].map((page) => page.headers.get('etag'));
    expect(new Set([after, ...others]).size).toBe(3);
  });

  test('when a create lands after a full last page, then its body is unchanged but it gains a Link, and its ETag changes', async () => {
    await seedPets(t.dataSource, 2);
    const full = await get(t, '/v1/pets?limit=2');
    expect(full.headers.get('link')).toBeNull();
    await createPet(t);
    const followed = await get(t, '/v1/pets?limit=2', full.headers.get('etag')!);
    expect(followed.status).toBe(200);
    expect(followed.body).toEqual(full.body);
    expect(followed.headers.get('link')).toMatch(/rel="next"$/);
    expect(followed.headers.get('etag')).not.toBe(full.headers.get('etag'));
  });

  test("when If-None-Match holds a page's current ETag, then 304 with no body and the 200's fields", async () => {
    await seedPets(t.dataSource, 3);
    const page = await get(t, '/v1/pets?limit=2', undefined, { direct: true });
    const tag = page.headers.get('etag')!;
    const notModified = await get(t, '/v1/pets?limit=2', tag);
    expect(notModified.status).toBe(304);
    expect(notModified.body).toBeUndefined();
    expect(notModified.headers.get('etag')).toBe(tag);
    expect(notModified.headers.get('link')).toBe(page.headers.get('link'));
    expect(notModified.headers.get('cache-control')).toBe('private, no-cache');
    expect(notModified.headers.get('ratelimit-policy')).toBe(page.headers.get('ratelimit-policy'));
    expect(notModified.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
    // RFC 9110 §15.4.5: no representation metadata beyond the listed fields; §8.6: no Content-Length but the 200's.
    expect(notModified.headers.get('content-type')).toBeNull();
    expect(notModified.headers.get('content-length')).toBeNull();
    const head = await get(t, '/v1/pets?limit=2', tag, { method: 'HEAD' });
    expect(head.status).toBe(304);
    expect(head.headers.get('content-length')).toBe(page.headers.get('content-length'));
  });

  test("when If-None-Match holds a pet's current ETag, then 304 with its deprecation fields", async () => {
    const pet = await createPet(t);
    const tag = (await get(t, `/v1/pets/${pet.id}`)).headers.get('etag')!;
    const notModified = await get(t, `/v1/pets/${pet.id}`, tag);
    expect(notModified.status).toBe(304);
    expect(notModified.body).toBeUndefined();
    expect(notModified.headers.get('etag')).toBe(tag);
    for (const field of ['deprecation', 'sunset', 'link']) expect(notModified.headers.get(field)).not.toBeNull();
  });

  test.each([
    ['a list holding it', (tag: string) => `"stale", ${tag} , "other"`],
    ['a list without spaces', (tag: string) => `"stale",${tag}`],
    ['*', () => '*'],
    ['its weak form W/', (tag: string) => `W/${tag}`],
    ['its weak form in a list', (tag: string) => `"stale", W/${tag}`],
  ])('when If-None-Match is %s, then 304', async (_form, ifNoneMatch) => {
    await createPet(t);
    const tag = (await get(t, '/v1/pets')).headers.get('etag')!;
    expect((await get(t, '/v1/pets', ifNoneMatch(tag))).status).toBe(304);
  });

  test.each([
    ['another tag', () => '"stale"'],
    ['a list of others', () => '"stale", W/"older"'],
    ['the tag unquoted', (tag: string) => tag.slice(1, -1)],
    ['the tag of an earlier page', (_tag: string, earlier: string) => earlier],
  ])('when If-None-Match is %s, then 200 with the page and its ETag', async (_form, ifNoneMatch) => {
    await createPet(t);
    const earlier = (await get(t, '/v1/pets')).headers.get('etag')!;
    await createPet(t);
    const current = await get(t, '/v1/pets');
    const result = await get(t, '/v1/pets', ifNoneMatch(current.headers.get('etag')!, earlier));
    expect(result.status).toBe(200);
    expect(result.body).toEqual(current.body);
    expect(result.headers.get('etag')).toBe(current.headers.get('etag'));
  });

  test('when a request asks a fresh page with Cache-Control: no-cache or If-Modified-Since beside a matching If-None-Match, then still 304', async () => {
    await createPet(t);
    const tag = (await get(t, '/v1/pets')).headers.get('etag')!;
    const asked = await request(t, 'GET', '/v1/pets', {
      headers: { 'if-none-match': tag, 'cache-control': 'no-cache', 'if-modified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' },
    });
    expect(asked.status).toBe(304);
  });

  test.each([
    ['404, an unknown pet', '/v1/pets/999999', {}, 404],
    ['400, a bad limit', '/v1/pets?limit=0', {}, 400],
    ['401, no key', '/v1/pets', { apiKey: null }, 401],
    ['401, an unknown key', '/v1/pets', { apiKey: 'pst_sk_unknown' }, 401],
  ])('when the answer is %s, then with If-None-Match: * it stays that error, with no ETag and Cache-Control: no-store', async (_case, path, init, status) => {
    const result = await get(t, path, '*', init);
    expect(result.status).toBe(status);
    expect(result.headers.get('etag')).toBeNull();
    expect(result.headers.get('cache-control')).toBe('no-store');
  });

  test('when the key that read a page is revoked, then its ETag gets 401, not 304', async () => {
    const { apiKey, key } = await t.apiKeys.create('revoked soon');
    const tag = (await get(t, '/v1/pets', undefined, { apiKey: key })).headers.get('etag')!;
    await t.apiKeys.revoke(apiKey.id);
    const result = await get(t, '/v1/pets', tag, { apiKey: key });
    expect(result.status).toBe(401);
    expect(result.headers.get('etag')).toBeNull();
  });
});

describe('a 304 is not charged to the rate limit (docs/security.md "Limits")', () => {
  const QUOTA = 5;
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { RATE_LIMIT_MAX: String(QUOTA) } });
    await createPet(t);
  });
  afterAll(() => t.close());

  test.each([
    ['a secret key', 'secret'],
    ['a publishable key (counted per address, under a key-wide ceiling)', 'publishable'],
  ] as const)('with %s: a 200 spends one unit, each 304 none, and says what is left', async (_name, kind) => {
    const { key } = await t.apiKeys.create({ name: kind, kind });
    const page = await get(t, '/v1/pets', undefined, { apiKey: key });
    expect(remainingOf(page)).toBe(QUOTA - 1);
    const tag = page.headers.get('etag')!;
    for (const method of ['GET', 'GET', 'HEAD']) {
      const notModified = await get(t, '/v1/pets', tag, { apiKey: key, method });
      expect(notModified.status).toBe(304);
      expect(remainingOf(notModified)).toBe(QUOTA - 1);
    }
    expect(remainingOf(await get(t, '/v1/pets', '"stale"', { apiKey: key }))).toBe(QUOTA - 2);
    expect(remainingOf(await get(t, '/v1/pets', undefined, { apiKey: key }))).toBe(QUOTA - 3);
  });

  test('when a key has spent its quota, then a matching If-None-Match is 429 with no ETag: the limit is checked before the answer', async () => {
    const { key } = await t.apiKeys.create('spent');
    const tag = (await get(t, '/v1/pets', undefined, { apiKey: key })).headers.get('etag')!;
    for (let i = 1; i < QUOTA; i++) expect((await get(t, '/v1/pets', undefined, { apiKey: key })).status).toBe(200);
    const refused = await get(t, '/v1/pets', tag, { apiKey: key });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('etag')).toBeNull();
    expect(remainingOf(refused)).toBe(0);
  });
});

describe('conditional requests from a browser (CORS_ORIGINS)', () => {
  const ORIGIN = 'https://app.example.com';
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { CORS_ORIGINS: ORIGIN } });
  });
  afterAll(() => t.close());

  test('when a listed origin revalidates a page itself, then it may send If-None-Match and read the ETag', async () => {
    const preflight = await request(t, 'OPTIONS', '/v1/pets', {
      apiKey: null,
      headers: { origin: ORIGIN, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization,if-none-match' },
      direct: true,
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/If-None-Match/);
    const page = await request(t, 'GET', '/v1/pets', { headers: { origin: ORIGIN }, direct: true });
    expect(page.headers.get('access-control-expose-headers')).toMatch(/\bETag\b/);
  });
});
