import { AuditTrail, CLI_ACTOR } from '../../src/audit/audit-trail';
import { encodeIdCursor } from '../../src/validation/opaque-cursor';
import { type TestApp, request, startTestApp } from '../helpers/test-app';

/** What every administration operation shares (docs/admin.md): its scopes, CORS never granting it, paging, the audit trail. */

describe('the administration API', () => {
  let t: TestApp;
  let admin: string;
  const trailOf = (app: TestApp) => new AuditTrail(app.database, app.app.log);
  beforeAll(async () => {
    t = await startTestApp({ env: { CORS_ORIGINS: 'https://shop.example.com' } });
    admin = (await t.apiKeys.create({ name: 'ops', scopes: ['keys:admin', 'webhooks:admin'] })).key;
  });
  afterAll(() => t.close());

  test('when a key without keys:admin lists the audit trail, then 403 insufficient_scope names the scope, and a key with it gets 200', async () => {
    const refused = await request(t, 'GET', '/v1/admin/audit-events');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'FORBIDDEN', status: 403 });
    expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="pet-store", error="insufficient_scope", scope="keys:admin"');
    const webhooksOnly = (await t.apiKeys.create({ name: 'hooks', scopes: ['webhooks:admin'] })).key;
    expect((await request(t, 'GET', '/v1/admin/audit-events', { apiKey: webhooksOnly })).status).toBe(403);
    const allowed = await request(t, 'GET', '/v1/admin/audit-events', { apiKey: admin });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get('ratelimit')).toMatch(/^"default";r=\d+;t=\d+$/);
    expect((await request(t, 'GET', '/v1/admin/audit-events', { apiKey: null })).status).toBe(401);
  });

  test('when a key lacks the scope of a change, then its 403 is in the audit trail with the key and the target; a read refused, or a request without a key, is not', async () => {
    const { key, apiKey } = await t.apiKeys.create({ name: 'hooks only', scopes: ['webhooks:admin'] });
    const newest = async () => (await request(t, 'GET', '/v1/admin/audit-events?limit=1', { apiKey: admin })).body[0];
    const before = await newest();
    expect((await request(t, 'POST', '/v1/admin/api-keys/12/roll', { apiKey: key, body: {} })).status).toBe(403);
    const recorded = await newest();
    expect(recorded).toMatchObject({
      channel: 'api',
      actorKeyId: apiKey.id,
      action: 'api_key.roll',
      targetType: 'api_key',
      targetId: '12',
      address: '127.0.0.1',
      outcome: 'FORBIDDEN',
    });
    expect(recorded.id).toBeGreaterThan(before?.id ?? 0);
    expect((await request(t, 'GET', '/v1/admin/api-keys', { apiKey: key })).status).toBe(403);
    expect((await request(t, 'POST', '/v1/admin/api-keys', { apiKey: null, body: { name: 'x' } })).status).toBe(401);
    expect((await newest()).id).toBe(recorded.id);
  });

  test('when a publishable key asks for an administration scope, then it is refused: only secret keys hold them, and none by default', async () => {
    await expect(t.apiKeys.create({ name: 'web', kind: 'publishable', scopes: ['keys:admin'] })).rejects.toThrow(
      'a publishable key cannot hold keys:admin: it may hold pets:read',
    );
    const { apiKey } = await t.apiKeys.create('plain');
    expect(apiKey.scopes).toBe('pets:read pets:write');
  });

  test('when CORS_ORIGINS lists an origin, then the pets answer it and the administration API never does, preflight or not', async () => {
    const origin = 'https://shop.example.com';
    const preflight = (path: string) =>
      request(t, 'OPTIONS', path, {
        apiKey: null,
        headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
        direct: true,
      });
    const pets = await preflight('/v1/pets');
    expect(pets.headers.get('access-control-allow-origin')).toBe(origin);
    const adminPreflight = await preflight('/v1/admin/audit-events');
    expect(adminPreflight.status).toBe(405);
    expect([...adminPreflight.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
    const read = await request(t, 'GET', '/v1/admin/audit-events', { apiKey: admin, headers: { origin } });
    expect(read.status).toBe(200);
    expect([...read.headers.keys()].filter((name) => name.startsWith('access-control-'))).toEqual([]);
    expect((await request(t, 'GET', '/v1/pets', { headers: { origin } })).headers.get('access-control-allow-origin')).toBe(origin);
  });

  test('when the trail holds more than a page, then it is listed newest first, a page at a time through Link, each event once', async () => {
    const trail = trailOf(t);
    await t.dataSource.transaction(async (manager) => {
      for (let i = 1; i <= 5; i++) await trail.record(manager, { channel: 'api', keyId: 7, requestId: `req-${i}`, address: '192.0.2.1' }, 'api_key.revoke', i);
    });
    await trail.refused(CLI_ACTOR, 'api_key.roll', 99, new RangeError('no such key'));
    const seen: any[] = [];
    let path: string | undefined = '/v1/admin/audit-events?limit=2';
    while (path) {
      const page = await request(t, 'GET', path, { apiKey: admin });
      expect(page.status).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(2);
      seen.push(...page.body);
      path = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1];
    }
    expect(seen.map((event) => event.id)).toEqual([...seen.map((event) => event.id)].sort((a, b) => b - a));
    expect(new Set(seen.map((event) => event.id)).size).toBe(seen.length);
    const [newest, ...rest] = seen;
    expect(newest).toEqual({
      id: expect.any(Number),
      occurredAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      channel: 'cli',
      actorKeyId: null,
      action: 'api_key.roll',
      targetType: 'api_key',
      targetId: '99',
      requestId: null,
      address: null,
      outcome: 'BAD_USER_INPUT',
    });
    expect(rest.filter((event) => event.requestId?.startsWith('req-')).map((event) => event.targetId)).toEqual(['5', '4', '3', '2', '1']);
    expect(rest[0]).toMatchObject({ channel: 'api', actorKeyId: 7, address: '192.0.2.1', outcome: 'success' });
  });

  test.each([
    ['an edited cursor', `${encodeIdCursor('audit-events', 3)}A`, /after must be a cursor from a previous page of audit-events, unchanged/],
    ['a cursor of another list', encodeIdCursor('api-keys', 3), /after must be a cursor from a previous page of audit-events/],
    ['a limit of 0', undefined, /limit must not be less than 1/],
    ['a limit of 101', undefined, /limit must not be greater than 100/],
  ])('when the trail is asked for with %s, then 400 BAD_USER_INPUT says why', async (what, after, message) => {
    const query = after ? `after=${after}` : `limit=${what.endsWith('0') ? 0 : 101}`;
    const answer = await request(t, 'GET', `/v1/admin/audit-events?${query}`, { apiKey: admin });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('BAD_USER_INPUT');
    expect(answer.body.message).toMatch(message);
  });
});
