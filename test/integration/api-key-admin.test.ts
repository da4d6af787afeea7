import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import { ApiKey } from '../../src/auth/api-key.entity';
import { encodeIdCursor } from '../../src/validation/opaque-cursor';
import { type HttpResult, type TestApp, request, startTestApp } from '../helpers/test-app';
import { createTestDatabase, testOnMysql } from '../helpers/test-database';

/** The administration of API keys over REST, `/v1/admin/api-keys` (docs/admin.md "API keys"). */

const KEYS = '/v1/admin/api-keys';
const VIEW_FIELDS = ['id', 'name', 'kind', 'scopes', 'origins', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt'];
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SECRET_KEY = /^pst_sk_[A-Za-z0-9_-]{49}$/;

/** Within a minute of `ms` from now. */
const inAbout = (ms: number) => (iso: unknown) => Math.abs(Date.parse(iso as string) - (Date.now() + ms)) < 60_000;

describe('the administration of API keys', () => {
  let t: TestApp;
  /** Holds every scope. */
  let admin: { id: number; key: string };
  beforeAll(async () => {
    t = await startTestApp({ env: { API_KEY_CACHE_SECONDS: '60' } });
    const created = await t.apiKeys.create({ name: 'ops', scopes: ['pets:read', 'pets:write', 'keys:admin', 'webhooks:admin'] });
    admin = { id: created.apiKey.id, key: created.key };
  });
  afterAll(() => t.close());

  /** A request as `key` (default: the admin's) with a request id of its own, to find its audit event by. */
  async function as(method: string, path: string, body?: unknown, key: string = admin.key): Promise<HttpResult & { requestId: string }> {
    const requestId = randomUUID();
    const answer = await request(t, method, path, { apiKey: key, body, headers: { 'x-request-id': requestId } });
    return { ...answer, requestId };
  }

  /** The audit events a request left. */
  const eventsOf = (requestId: string) => t.dataSource.getRepository(AuditEvent).find({ where: { requestId }, order: { id: 'ASC' } });
  const keyCount = () => t.dataSource.getRepository(ApiKey).count();
  const listPets = (key: string) => request(t, 'GET', '/v1/pets', { apiKey: key });

  describe('each operation', () => {
    // Three values each: jest passes a `done` callback to a row shorter than the function's parameters.
    const operations: Array<[string, string, unknown]> = [
      ['POST', KEYS, { name: 'x' }],
      ['GET', KEYS, undefined],
      ['GET', `${KEYS}/1`, undefined],
      ['POST', `${KEYS}/1/roll`, {}],
      ['POST', `${KEYS}/1/revoke`, undefined],
    ];
    test.each(operations)('when %s %s is asked without keys:admin, then 403 insufficient_scope names it, and without a key 401', async (method, path, body) => {
      const webhooksOnly = (await t.apiKeys.create({ name: 'hooks', scopes: ['pets:read', 'pets:write', 'webhooks:admin'] })).key;
      const before = await keyCount();
      const refused = await as(method, path, body, webhooksOnly);
      expect(refused.status).toBe(403);
      expect(refused.body).toMatchObject({ code: 'FORBIDDEN', status: 403 });
      expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="pet-store", error="insufficient_scope", scope="keys:admin"');
      expect((await request(t, method, path, { apiKey: null, body })).status).toBe(401);
      // The guard refused it before the operation: nothing done; a refused change is in the audit trail, a refused read is not.
      expect(await keyCount()).toBe(before);
      const recorded = (await eventsOf(refused.requestId)).map(({ action, outcome }) => ({ action, outcome }));
      expect(recorded).toEqual(method === 'GET' ? [] : [{ action: expect.stringMatching(/^api_key\./), outcome: 'FORBIDDEN' }]);
    });
  });

  describe('createApiKey', () => {
    test('when a key is created, then 201 with Location and its view plus the key, which works, is shown this once, and the change is audited', async () => {
      const created = await as('POST', KEYS, { name: 'billing', scopes: ['pets:read'], expiresIn: 3600, rateLimit: 50 });
      expect(created.status).toBe(201);
      const { key, ...view } = created.body;
      expect(key).toMatch(SECRET_KEY);
      expect(Object.keys(view)).toEqual(VIEW_FIELDS);
      expect(view).toEqual({
        id: expect.any(Number),
        name: 'billing',
        kind: 'secret',
        scopes: ['pets:read'],
        origins: [],
        createdAt: expect.stringMatching(ISO),
        expiresAt: expect.stringMatching(ISO),
        lastUsedAt: null,
        revokedAt: null,
      });
      expect(inAbout(3_600_000)(view.expiresAt)).toBe(true);
      expect(created.headers.get('location')).toBe(`${KEYS}/${view.id}`);

      const used = await listPets(key);
      expect(used.status).toBe(200);
      expect(used.headers.get('ratelimit-policy')).toMatch(/^"default";q=50;/);
      expect((await request(t, 'POST', '/v1/pets', { apiKey: key, body: { name: 'Rex', categoryId: 1 } })).status).toBe(403);

      // Shown once: neither its read nor the list holds it.
      const read = await as('GET', created.headers.get('location')!);
      expect(read.status).toBe(200);
      expect(read.body).toEqual({ ...view, lastUsedAt: expect.stringMatching(ISO) });
      const listed = await as('GET', `${KEYS}?limit=100`);
      expect(JSON.stringify([read.body, listed.body])).not.toContain(key);
      expect(JSON.stringify(listed.body)).not.toMatch(/pst_|keyHash|key_hash/);

      expect(await eventsOf(created.requestId)).toEqual([
        expect.objectContaining({
          channel: 'api',
          actorKeyId: admin.id,
          action: 'api_key.create',
          targetType: 'api_key',
          targetId: String(view.id),
          address: '127.0.0.1',
          outcome: 'success',
        }),
      ]);
      const trail = JSON.stringify(await t.dataSource.getRepository(AuditEvent).find());
      expect(trail).not.toContain(key);
    });

    test('when a publishable key is created with origins, and a secret one with expiresIn null, then they have them', async () => {
      const web = await as('POST', KEYS, { name: 'shop-web', kind: 'publishable', origins: ['https://a.example'], expiresIn: 7 * 86_400 });
      expect(web.status).toBe(201);
      expect(web.body).toMatchObject({ kind: 'publishable', scopes: ['pets:read'], origins: ['https://a.example'] });
      expect(web.body.key).toMatch(/^pst_pk_/);
      expect(inAbout(7 * 86_400_000)(web.body.expiresAt)).toBe(true);
      const forever = await as('POST', KEYS, { name: 'forever', expiresIn: null });
      expect(forever.status).toBe(201);
      expect(forever.body).toMatchObject({ kind: 'secret', scopes: ['pets:read', 'pets:write'], expiresAt: null });
      const byDefault = await as('POST', KEYS, { name: 'default' });
      expect(inAbout(90 * 86_400_000)(byDefault.body.expiresAt)).toBe(true);
    });

    const bad: Array<[string, unknown, RegExp]> = [
      ['no name', {}, /name is required/],
      ['an empty name', { name: '' }, /name must be 1 to 100 characters/],
      ['a blank name', { name: '   ' }, /name must be 1 to 100 characters/],
      ['an unknown kind', { name: 'x', kind: 'root' }, /kind must be one of: secret, publishable/],
      ['a null kind', { name: 'x', kind: null }, /kind must be one of/],
      ['an unknown scope', { name: 'x', scopes: ['pets:delete'] }, /unknown scope "pets:delete"/],
      ['an admin scope on a publishable key', { name: 'x', kind: 'publishable', scopes: ['keys:admin'] }, /a publishable key cannot hold keys:admin/],
      ['origins on a secret key', { name: 'x', origins: ['https://a.example'] }, /origins apply to publishable keys only/],
      ['a path in an origin', { name: 'x', kind: 'publishable', origins: ['https://a.example/shop'] }, /is not an origin/],
      ['no expiry on a publishable key', { name: 'x', kind: 'publishable', expiresIn: null }, /a publishable key must expire/],
      ['a lifetime of 0', { name: 'x', expiresIn: 0 }, /expiresIn must not be less than 1/],
      ['a lifetime as a duration', { name: 'x', expiresIn: '7d' }, /expiresIn must be an integer number/],
      ['a fractional rate limit', { name: 'x', rateLimit: 1.5 }, /rateLimit must be an integer number/],
      ['an unknown field', { name: 'x', key: 'pst_sk_mine' }, /property key should not exist/],
      ['an array', [{ name: 'x' }], /expected an object, got an array/],
    ];
    test.each(bad)('when the body has %s, then 400 BAD_USER_INPUT says why, nothing is stored, and the refusal is audited', async (_what, body, message) => {
      const before = await keyCount();
      const answer = await as('POST', KEYS, body);
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ code: 'BAD_USER_INPUT', message: expect.stringMatching(message), status: 400 });
      expect(await keyCount()).toBe(before);
      expect(await eventsOf(answer.requestId)).toEqual([
        expect.objectContaining({ action: 'api_key.create', targetId: null, actorKeyId: admin.id, outcome: 'BAD_USER_INPUT' }),
      ]);
    });
  });

  describe('a key grants only what it holds', () => {
    let keysAdmin: { id: number; key: string };
    beforeAll(async () => {
      const created = await t.apiKeys.create({ name: 'keys only', scopes: ['keys:admin'] });
      keysAdmin = { id: created.apiKey.id, key: created.key };
    });

    test.each([
      ['a scope it lacks', { name: 'x', scopes: ['keys:admin', 'webhooks:admin'] }, 'webhooks:admin'],
      ['the default scopes, which it lacks', { name: 'x' }, 'pets:read, pets:write'],
    ])('when a key creates one with %s, then 403 FORBIDDEN names them, nothing is stored, and the refusal is audited', async (_what, body, named) => {
      const before = await keyCount();
      const answer = await as('POST', KEYS, body, keysAdmin.key);
      expect(answer.status).toBe(403);
      expect(answer.body).toEqual({
        code: 'FORBIDDEN',
        message: `A key grants only scopes it holds: this key does not hold ${named}, so it cannot give them to another key.`,
        status: 403,
      });
      expect(answer.headers.has('www-authenticate')).toBe(false);
      expect(await keyCount()).toBe(before);
      expect(await eventsOf(answer.requestId)).toEqual([
        expect.objectContaining({ action: 'api_key.create', targetId: null, actorKeyId: keysAdmin.id, outcome: 'FORBIDDEN' }),
      ]);
    });

    test('when a key creates one with scopes it holds, then 201', async () => {
      const answer = await as('POST', KEYS, { name: 'deputy', scopes: ['keys:admin'] }, keysAdmin.key);
      expect(answer.status).toBe(201);
      expect(answer.body.scopes).toEqual(['keys:admin']);
    });

    test('when a key rolls one holding a scope it lacks, then 403 FORBIDDEN, nothing changes, and the refusal is audited; the CLI-made key it holds rolls', async () => {
      const strong = await t.apiKeys.create({ name: 'strong', scopes: ['pets:write', 'keys:admin'] });
      const before = await keyCount();
      const refused = await as('POST', `${KEYS}/${strong.apiKey.id}/roll`, {}, keysAdmin.key);
      expect(refused.status).toBe(403);
      expect(refused.body.message).toMatch(/does not hold pets:write/);
      expect(await keyCount()).toBe(before);
      expect((await as('GET', `${KEYS}/${strong.apiKey.id}`)).body.expiresAt).toBe(strong.apiKey.expiresAt!.toISOString());
      expect(await eventsOf(refused.requestId)).toEqual([
        expect.objectContaining({ action: 'api_key.roll', targetId: String(strong.apiKey.id), actorKeyId: keysAdmin.id, outcome: 'FORBIDDEN' }),
      ]);
      const held = await t.apiKeys.create({ name: 'held', scopes: ['keys:admin'] });
      expect((await as('POST', `${KEYS}/${held.apiKey.id}/roll`, {}, keysAdmin.key)).status).toBe(201);
    });

    test('when a key revokes one holding scopes it lacks, then it may: revoking grants nothing', async () => {
      const strong = await t.apiKeys.create({ name: 'strong', scopes: ['pets:write'] });
      expect((await as('POST', `${KEYS}/${strong.apiKey.id}/revoke`, undefined, keysAdmin.key)).status).toBe(200);
    });
  });

  describe('listApiKeys and getApiKey', () => {
    test('when the keys fill more than a page, then they are listed by ascending id, a page at a time through Link, each once, each the view of its read', async () => {
      for (let i = 0; i < 3; i++) await t.apiKeys.create(`page ${i}`);
      const seen: any[] = [];
      let path: string | undefined = `${KEYS}?limit=2`;
      while (path) {
        const page = await as('GET', path);
        expect(page.status).toBe(200);
        expect(page.body.length).toBeLessThanOrEqual(2);
        seen.push(...page.body);
        path = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1];
        if (path) expect(path).toMatch(/^\/v1\/admin\/api-keys\?limit=2&after=/);
      }
      expect(seen.map((key) => key.id)).toEqual([...seen.map((key) => key.id)].sort((a, b) => a - b));
      expect(seen).toHaveLength(await keyCount());
      for (const key of seen) expect(Object.keys(key)).toEqual(VIEW_FIELDS);
      const last = seen.at(-1);
      expect((await as('GET', `${KEYS}/${last.id}`)).body).toEqual(last);
    });

    test.each([
      ['a cursor of another list', `after=${encodeIdCursor('audit-events', 1)}`, /after must be a cursor from a previous page of api-keys/],
      ['a limit of 101', 'limit=101', /limit must not be greater than 100/],
    ])('when the list is asked for with %s, then 400 BAD_USER_INPUT', async (_what, query, message) => {
      const answer = await as('GET', `${KEYS}?${query}`);
      expect(answer.status).toBe(400);
      expect(answer.body.message).toMatch(message);
    });

    test('when a key that does not exist is read, then 404 NOT_FOUND; a malformed id is 400', async () => {
      expect((await as('GET', `${KEYS}/999999`)).body).toEqual({ code: 'NOT_FOUND', message: 'No key has id 999999.', status: 404 });
      const malformed = await as('GET', `${KEYS}/abc`);
      expect(malformed.status).toBe(400);
      expect(malformed.body.message).toMatch(/id must be a positive integer/);
    });
  });

  describe('rollApiKey', () => {
    test('when a key is rolled with an overlap, then 201 with the new key and its Location, both work, the old one expires at the overlap end, and it is audited', async () => {
      const old = await t.apiKeys.create({ name: 'to-roll', scopes: ['pets:read'], rateLimit: 40 });
      const rolled = await as('POST', `${KEYS}/${old.apiKey.id}/roll`, { overlap: 3600 });
      expect(rolled.status).toBe(201);
      const { key, ...view } = rolled.body;
      expect(key).toMatch(SECRET_KEY);
      expect(rolled.headers.get('location')).toBe(`${KEYS}/${view.id}`);
      expect(view).toMatchObject({ name: 'to-roll', kind: 'secret', scopes: ['pets:read'], revokedAt: null });
      expect(inAbout(90 * 86_400_000)(view.expiresAt)).toBe(true);
      expect((await listPets(old.key)).status).toBe(200);
      const fresh = await listPets(key);
      expect(fresh.status).toBe(200);
      expect(fresh.headers.get('ratelimit-policy')).toMatch(/^"default";q=40;/);
      expect(inAbout(3_600_000)((await as('GET', `${KEYS}/${old.apiKey.id}`)).body.expiresAt)).toBe(true);
      expect(JSON.stringify((await as('GET', `${KEYS}?limit=100`)).body)).not.toContain(key);
      expect(await eventsOf(rolled.requestId)).toEqual([
        expect.objectContaining({ channel: 'api', actorKeyId: admin.id, action: 'api_key.roll', targetId: String(old.apiKey.id), outcome: 'success' }),
      ]);
    });

    test('when a key is rolled with {}, then the old one keeps a day', async () => {
      const old = await t.apiKeys.create({ name: 'defaults', scopes: ['pets:read'] });
      expect((await as('POST', `${KEYS}/${old.apiKey.id}/roll`, {})).status).toBe(201);
      expect(inAbout(86_400_000)((await as('GET', `${KEYS}/${old.apiKey.id}`)).body.expiresAt)).toBe(true);
    });

    test('when no active key has the id, or the overlap is bad, then 404 or 400, nothing is made, and the refusal is audited', async () => {
      const revoked = await t.apiKeys.create('revoked');
      await t.apiKeys.revoke(revoked.apiKey.id);
      const before = await keyCount();
      for (const id of [revoked.apiKey.id, 999999]) {
        const answer = await as('POST', `${KEYS}/${id}/roll`, {});
        expect(answer.body).toEqual({ code: 'NOT_FOUND', message: `No active key has id ${id}.`, status: 404 });
        expect(await eventsOf(answer.requestId)).toEqual([expect.objectContaining({ action: 'api_key.roll', targetId: String(id), outcome: 'NOT_FOUND' })]);
      }
      const active = await t.apiKeys.create('active');
      const bad = await as('POST', `${KEYS}/${active.apiKey.id}/roll`, { overlap: -1 });
      expect(bad.status).toBe(400);
      expect(bad.body.message).toMatch(/overlap must not be less than 1/);
      expect(await eventsOf(bad.requestId)).toEqual([expect.objectContaining({ targetId: String(active.apiKey.id), outcome: 'BAD_USER_INPUT' })]);
      expect(await keyCount()).toBe(before + 1);
    });
  });

  describe('revokeApiKey', () => {
    test('when a key in use is revoked, then 200 with revokedAt, it is refused at once, stays listed, and it is audited; again is 404, audited too', async () => {
      const victim = await t.apiKeys.create('victim');
      // Cached for a minute: only the revocation can refuse it now.
      expect((await listPets(victim.key)).status).toBe(200);
      const revoked = await as('POST', `${KEYS}/${victim.apiKey.id}/revoke`);
      expect(revoked.status).toBe(200);
      expect(revoked.body).toMatchObject({ id: victim.apiKey.id, name: 'victim', revokedAt: expect.stringMatching(ISO) });
      expect(Object.keys(revoked.body)).toEqual(VIEW_FIELDS);
      expect((await listPets(victim.key)).status).toBe(401);
      expect((await as('GET', `${KEYS}/${victim.apiKey.id}`)).body.revokedAt).toBe(revoked.body.revokedAt);
      expect(await eventsOf(revoked.requestId)).toEqual([
        expect.objectContaining({ channel: 'api', actorKeyId: admin.id, action: 'api_key.revoke', targetId: String(victim.apiKey.id), outcome: 'success' }),
      ]);
      const again = await as('POST', `${KEYS}/${victim.apiKey.id}/revoke`);
      expect(again.body).toEqual({ code: 'NOT_FOUND', message: `No active key has id ${victim.apiKey.id}.`, status: 404 });
      expect(await eventsOf(again.requestId)).toEqual([expect.objectContaining({ action: 'api_key.revoke', outcome: 'NOT_FOUND' })]);
    });
  });

  test.each([
    ['DELETE', `${KEYS}/1`, 'GET, HEAD'],
    ['PUT', KEYS, 'GET, HEAD, POST'],
    ['GET', `${KEYS}/1/roll`, 'POST'],
    ['GET', `${KEYS}/1/revoke`, 'POST'],
  ])('when %s %s, then 405 with Allow: %s', async (method, path, allow) => {
    const answer = await as(method, path);
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe(allow);
  });
});

describe('two instances on one database', () => {
  // MySQL only: apps on the embedded database each hold their own copy of it.
  testOnMysql(
    'when a key is created through one, then both read it alike; revoked through one, the other refuses it within API_KEY_CACHE_SECONDS',
    async () => {
      const { database, drop } = await createTestDatabase();
      const first = await startTestApp({ database, env: { API_KEY_CACHE_SECONDS: '1' } });
      const second = await startTestApp({ database, env: { API_KEY_CACHE_SECONDS: '1' } });
      try {
        const admin = (await first.apiKeys.create({ name: 'ops', scopes: ['pets:read', 'pets:write', 'keys:admin'] })).key;
        const created = await request(first, 'POST', KEYS, { apiKey: admin, body: { name: 'shared' } });
        expect(created.status).toBe(201);
        const path = created.headers.get('location')!;
        const reads = await Promise.all([first, second].map((t) => request(t, 'GET', path, { apiKey: admin })));
        expect(reads[1].body).toEqual(reads[0].body);
        const lists = await Promise.all([first, second].map((t) => request(t, 'GET', `${KEYS}?limit=100`, { apiKey: admin })));
        expect(lists[1].body).toEqual(lists[0].body);

        expect((await request(second, 'GET', '/v1/pets', { apiKey: created.body.key })).status).toBe(200);
        expect((await request(first, 'POST', `${path}/revoke`, { apiKey: admin })).status).toBe(200);
        expect((await request(first, 'GET', '/v1/pets', { apiKey: created.body.key })).status).toBe(401);
        await sleep(1100);
        expect((await request(second, 'GET', '/v1/pets', { apiKey: created.body.key })).status).toBe(401);
        expect((await request(second, 'GET', path, { apiKey: admin })).body.revokedAt).toBe(
          (await request(first, 'GET', path, { apiKey: admin })).body.revokedAt,
        );
      } finally {
        await first.close();
        await second.close();
        await drop();
      }
    },
  );
});
