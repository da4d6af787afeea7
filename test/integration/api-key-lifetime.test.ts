import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { hash } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { ApiKey } from '../../src/auth/api-key.entity';
import type { DatabaseConfig } from '../../src/database/database-config';
import { openDatabase } from '../../src/database/open-database';
import { API_KEY_LIMITS } from '../../src/limits';
import { type HttpResult, graphql, request, startTestApp, type TestApp } from '../helpers/test-app';
import { createTestDatabase } from '../helpers/test-database';

/**
 * The life of an API key (docs/api-keys.md "Lifetime and rolling", "Listing keys", "Kinds and scopes"): expiry and its
 * header, rolling, per-key quotas, last use, and keys made before kinds existed; against the real app on a real database.
 */

const DAY = 86_400_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const NEW_PET = { name: 'Rex', categoryId: 1 };

/** The `r` (remaining) of an answer's RateLimit header. */
function remaining(result: HttpResult): number {
  const match = /;r=(\d+);/.exec(result.headers.get('ratelimit') ?? '');
  if (!match) throw new Error(`no RateLimit header: ${result.headers.get('ratelimit')}`);
  return Number(match[1]);
}

/** Waits until `at` has passed, with a margin for the clock's granularity. */
async function untilPast(at: Date): Promise<void> {
  await sleep(Math.max(0, at.getTime() - Date.now()) + 100);
}

/** Expects the refusal of an expired key: 401 invalid_token, the message saying so. */
function expectExpired(result: HttpResult): void {
  expect(result.status).toBe(401);
  expect(result.headers.get('www-authenticate')).toBe('Bearer realm="pet-store", error="invalid_token"');
  expect(JSON.stringify(result.body)).toMatch(/API key expired at \d{4}-\d\d-\d\dT/);
}

describe('key lifetime, roll, quota and last use', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  const row = (id: number) => t.dataSource.getRepository(ApiKey).findOneByOrFail({ id });

  describe('expiry', () => {
    test('when a key with a short lifetime is used, then its answers carry API-Key-Expires; once expired it gets 401 invalid_token on both surfaces', async () => {
      const { apiKey, key } = await t.apiKeys.create({ name: 'short', expiresInMs: 1500 });
      const expiresAt = apiKey.expiresAt!;
      const live = await request(t, 'GET', '/v1/pets', { apiKey: key });
      expect(live.status).toBe(200);
      const header = live.headers.get('api-key-expires')!;
      expect(header).toMatch(/^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$/);
      expect(Date.parse(header)).toBe(Math.floor(expiresAt.getTime() / 1000) * 1000);
      expect((await row(apiKey.id)).expiresAt!.getTime()).toBe(expiresAt.getTime());
      expect((await graphql(t, '{ __typename }', undefined, { apiKey: key })).headers.get('api-key-expires')).toBe(header);

      await untilPast(expiresAt);
      const rest = await request(t, 'GET', '/v1/pets', { apiKey: key });
      expectExpired(rest);
      expect(rest.body).toMatchObject({ code: 'UNAUTHENTICATED', message: `API key expired at ${expiresAt.toISOString()}: roll it or create a new one.` });
      expectExpired(await request(t, 'POST', '/v1/pets', { apiKey: key, body: NEW_PET }));
      expectExpired(await graphql(t, '{ pets { id } }', undefined, { apiKey: key, accept: 'application/graphql-response+json' }));
    });

    test('when a key never expires, then its answers carry no API-Key-Expires', async () => {
      const { apiKey, key } = await t.apiKeys.create({ name: 'forever', expiresInMs: null });
      expect(apiKey.expiresAt).toBeNull();
      const result = await request(t, 'GET', '/v1/pets', { apiKey: key });
      expect(result.status).toBe(200);
      expect(result.headers.has('api-key-expires')).toBe(false);
    });

    test('when a key is created without a lifetime, then it expires in 90 days', async () => {
      const before = Date.now();
      const { apiKey, key } = await t.apiKeys.create({ name: 'default' });
      const after = Date.now();
      expect(API_KEY_LIMITS.defaultLifetimeMs).toBe(90 * DAY);
      const stored = (await row(apiKey.id)).expiresAt!.getTime();
      expect(stored).toBeGreaterThanOrEqual(before + 90 * DAY - 60_000);
      expect(stored).toBeLessThanOrEqual(after + 90 * DAY + 60_000);
      const header = (await request(t, 'GET', '/v1/pets', { apiKey: key })).headers.get('api-key-expires')!;
      expect(Math.abs(Date.parse(header) - (Date.now() + 90 * DAY))).toBeLessThan(60_000);
    });

    test('when a publishable key is asked never to expire, then it is refused and nothing is stored', async () => {
      const count = await t.dataSource.getRepository(ApiKey).count();
      await expect(t.apiKeys.create({ name: 'p', kind: 'publishable', expiresInMs: null })).rejects.toThrow(new RangeError('a publishable key must expire'));
      expect(await t.dataSource.getRepository(ApiKey).count()).toBe(count);
    });
  });

  describe('roll', () => {
    test('when a key is rolled, then the new key has its kind, scopes, origins, rate limit and lifetime, both work and share one budget', async () => {
      const origins = ['https://shop.example.com'];
      const { apiKey: old, key: oldKey } = await t.apiKeys.create({ name: 'rolled', kind: 'publishable', origins, rateLimit: 5, expiresInMs: 30 * DAY });
      const rolled = (await t.apiKeys.roll(old.id, 60_000))!;
      expect(rolled.key).toMatch(/^pst_pk_[A-Za-z0-9_-]{49}$/);
      expect(rolled.key).not.toBe(oldKey);
      const fresh = await row(rolled.apiKey.id);
      expect(fresh).toMatchObject({
        name: 'rolled',
        kind: 'publishable',
        scopes: 'pets:read',
        origins: 'https://shop.example.com',
        rateLimit: 5,
        budgetKeyId: old.id,
      });
      expect(Math.abs(fresh.expiresAt!.getTime() - (Date.now() + 30 * DAY))).toBeLessThan(60_000);

      const first = await request(t, 'GET', '/v1/pets', { apiKey: oldKey });
      expect(first.status).toBe(200);
      expect(first.headers.get('ratelimit-policy')).toMatch(/^"default";q=5;/);
      const second = await request(t, 'GET', '/v1/pets', { apiKey: rolled.key, headers: { origin: origins[0] } });
      expect(second.status).toBe(200);
      expect(remaining(second)).toBe(remaining(first) - 1);
      expect(remaining(await request(t, 'GET', '/v1/pets', { apiKey: oldKey }))).toBe(remaining(first) - 2);

      // The old key's expiry is the overlap's end; the new key's its own.
      expect(first.headers.get('api-key-expires')).toBe(rolled.previous.expiresAt!.toUTCString());
      expect(Math.abs(rolled.previous.expiresAt!.getTime() - (Date.now() + 60_000))).toBeLessThan(10_000);
      expect((await row(old.id)).expiresAt!.getTime()).toBe(rolled.previous.expiresAt!.getTime());
      expect(second.headers.get('api-key-expires')).toBe(fresh.expiresAt!.toUTCString());
      // The rolled key keeps the origin list.
      expect((await request(t, 'GET', '/v1/pets', { apiKey: rolled.key, headers: { origin: 'https://evil.example' } })).status).toBe(403);
    });

    test('when a secret key is rolled with a short overlap, then the old key expires after it and the new one goes on', async () => {
      const { apiKey: old, key: oldKey } = await t.apiKeys.create({ name: 'short overlap', scopes: ['pets:write'] });
      const rolled = (await t.apiKeys.roll(old.id, 1000))!;
      expect(rolled.key).toMatch(/^pst_sk_/);
      expect((await row(rolled.apiKey.id)).scopes).toBe('pets:write');
      expect((await request(t, 'POST', '/v1/pets', { apiKey: oldKey, body: NEW_PET })).status).toBe(201);
      await untilPast(rolled.previous.expiresAt!);
      expectExpired(await request(t, 'POST', '/v1/pets', { apiKey: oldKey, body: NEW_PET }));
      expect((await request(t, 'POST', '/v1/pets', { apiKey: rolled.key, body: NEW_PET })).status).toBe(201);
    });

    test('when a key that never expires is rolled, then the new key never expires and the old one ends with the overlap', async () => {
      const { apiKey: old } = await t.apiKeys.create({ name: 'forever', expiresInMs: null });
      const rolled = (await t.apiKeys.roll(old.id, 60_000))!;
      expect((await row(rolled.apiKey.id)).expiresAt).toBeNull();
      expect((await row(old.id)).expiresAt).not.toBeNull();
    });

    test('when a revoked or unknown key is rolled, then nothing is made', async () => {
      const { apiKey } = await t.apiKeys.create({ name: 'revoked' });
      expect(await t.apiKeys.revoke(apiKey.id)).toBe(true);
      const count = await t.dataSource.getRepository(ApiKey).count();
      expect(await t.apiKeys.roll(apiKey.id, 60_000)).toBeNull();
      expect(await t.apiKeys.roll(987_654_321, 60_000)).toBeNull();
      expect(await t.dataSource.getRepository(ApiKey).count()).toBe(count);
    });
  });

  describe('last use', () => {
    test('when a key is used, then last_used_at is set, and a second use within the minute does not rewrite it', async () => {
      const { apiKey, key } = await t.apiKeys.create({ name: 'audited' });
      expect((await row(apiKey.id)).lastUsedAt).toBeNull();
      const before = Date.now();
      expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
      let first: Date | null = null;
      for (const deadline = Date.now() + 5000; first === null && Date.now() < deadline; await sleep(20)) first = (await row(apiKey.id)).lastUsedAt;
      expect(first).not.toBeNull();
      expect(first!.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(first!.getTime()).toBeLessThanOrEqual(Date.now() + 1000);

      await sleep(50);
      expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
      await sleep(300);
      expect((await row(apiKey.id)).lastUsedAt!.getTime()).toBe(first!.getTime());
    });
  });
});

describe('per-key quota', () => {
  test('when a key has a rate limit of 3, then RateLimit-Policy says q=3 and the 4th request is 429', async () => {
    const t = await startTestApp();
    try {
      const { key } = await t.apiKeys.create({ name: 'small', rateLimit: 3 });
      const first = await request(t, 'GET', '/v1/pets', { apiKey: key });
      expect(first.headers.get('ratelimit-policy')).toBe('"default";q=3;w=60');
      expect(remaining(first)).toBe(2);
      expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
      expect((await request(t, 'GET', '/v1/pets', { apiKey: key })).status).toBe(200);
      const fourth = await request(t, 'GET', '/v1/pets', { apiKey: key });
      expect(fourth.status).toBe(429);
      expect(fourth.body.code).toBe('TOO_MANY_REQUESTS');
      expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThan(0);
      // Other keys keep their own quota.
      expect((await request(t, 'GET', '/v1/pets')).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  test('when a publishable key is used from several addresses, then each has the quota, under a key-wide ceiling', async () => {
    const t = await startTestApp({ env: { TRUST_PROXY: '1' } });
    try {
      const quota = 2;
      const factor = API_KEY_LIMITS.publishableCeilingFactor;
      const from = (key: string, address: string) => request(t, 'GET', '/v1/pets', { apiKey: key, headers: { 'x-forwarded-for': address } });

      const { key: perAddress } = await t.apiKeys.create({ name: 'per address', kind: 'publishable', rateLimit: quota });
      for (let i = 0; i < quota; i++) expect((await from(perAddress, '203.0.113.1')).status).toBe(200);
      expect((await from(perAddress, '203.0.113.1')).status).toBe(429);
      for (let i = 0; i < quota; i++) expect((await from(perAddress, '203.0.113.2')).status).toBe(200);
      expect((await from(perAddress, '203.0.113.2')).status).toBe(429);

      const { key: ceiling } = await t.apiKeys.create({ name: 'ceiling', kind: 'publishable', rateLimit: quota });
      for (let visitor = 0; visitor < factor; visitor++) {
        for (let i = 0; i < quota; i++) expect({ visitor, status: (await from(ceiling, `198.51.100.${visitor}`)).status }).toEqual({ visitor, status: 200 });
      }
      // quota × factor spent: a visitor who has spent nothing is refused too.
      expect((await from(ceiling, '198.51.100.200')).status).toBe(429);
    } finally {
      await t.close();
    }
  });
});

/** A key in the format used before kinds existed: `pst_`, the secret, CRC-32 of the secret alone. */
function legacyKey(): string {
  const secret = randomBytes(32).toString('base64url');
  return `pst_${secret}${Buffer.from(crc32(secret).toString(16).padStart(8, '0'), 'hex').toString('base64url')}`;
}

describe('keys made before kinds existed', () => {
  test('when the kinds migration runs over a legacy key, then it works as a secret key with both scopes and no expiry', async () => {
    const owned = process.env.TEST_DATABASE_URL ? await createTestDatabase() : null;
    const config: DatabaseConfig = owned?.database ?? { type: 'sqlite', path: path.join(await mkdtemp(path.join(tmpdir(), 'legacy-key-')), 'petstore.sqlite') };
    const key = legacyKey();

    // The database as it was before the kinds migration, holding one key in the first migration's columns.
    const before = await openDatabase(config);
    try {
      const executed = async () => (await before.writer.query<Array<{ name: string }>>('SELECT name FROM migrations')).map(({ name }) => name);
      while ((await executed()).includes('AddApiKeyKinds1795651200000')) await before.writer.undoLastMigration();
      const runner = before.writer.createQueryRunner();
      const columns = (await runner.getTable('api_key'))!.columns.map((column) => column.name);
      await runner.release();
      expect(columns.sort()).toEqual(['created_at', 'id', 'key_hash', 'key_hint', 'name', 'revoked_at']);
      await before.writer.query('INSERT INTO api_key (name, key_hash, key_hint) VALUES (?, ?, ?)', ['legacy', hash('sha256', key, 'hex'), key.slice(-4)]);
    } finally {
      await before.close();
    }

    const t = await startTestApp({ database: config, createKey: false });
    try {
      const stored = await t.dataSource.getRepository(ApiKey).findOneByOrFail({ name: 'legacy' });
      expect(stored).toMatchObject({ kind: 'secret', scopes: 'pets:read pets:write', origins: null, expiresAt: null, rateLimit: null, lastUsedAt: null });
      const listed = await request(t, 'GET', '/v1/pets', { apiKey: key });
      expect(listed.status).toBe(200);
      expect(listed.headers.has('api-key-expires')).toBe(false);
      expect((await request(t, 'POST', '/v1/pets', { apiKey: key, body: NEW_PET })).status).toBe(201);
      const created = await graphql(t, 'mutation { createPet(input: { name: "Old", categoryId: 1 }) { name } }', undefined, { apiKey: key });
      expect(created.body.data).toEqual({ createPet: { name: 'Old' } });
    } finally {
      await t.app.close();
      await t.database.close();
      await owned?.drop();
    }
  });
});
