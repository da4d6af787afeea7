import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { AuditTrail, CLI_ACTOR } from '../../src/audit/audit-trail';
import { WEBHOOK_LIMITS } from '../../src/limits';
import { encodeIdCursor } from '../../src/validation/opaque-cursor';
import { WebhookEndpointRepository } from '../../src/webhooks/webhook-endpoint.repository';
import { WebhookEndpointService } from '../../src/webhooks/webhook-endpoint.service';
import { WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher';
import { type TestApp, createPet, request, startTestApp } from '../helpers/test-app';
import { createTestDatabase, testOnMysql } from '../helpers/test-database';
import { FAST_WEBHOOK_LIMITS, OPEN_TARGETS, startReceiver, until } from '../helpers/webhook-receiver';

/**
 * `/v1/admin/webhook-endpoints` (docs/admin.md "Webhook endpoints"), over real HTTP on the test database. The app allows
 * http URLs but not private addresses, so the target rules refuse 127.0.0.1; endpoints that deliver to a receiver on
 * 127.0.0.1 are added by the service with the rules lifted, as `WEBHOOK_ALLOW_PRIVATE_TARGETS=1 npm run webhook -- add` would.
 */

/** A public address as an IP literal: passes the target rules without DNS; nothing is sent to it (no dispatcher delivers here). */
const PUBLIC_URL = 'https://1.1.1.1/hooks/pets';
const OPEN = OPEN_TARGETS;
const LIMITS = FAST_WEBHOOK_LIMITS;
const BASE = '/v1/admin/webhook-endpoints';

describe('webhook endpoints over the administration API', () => {
  let t: TestApp;
  let admin: string;
  let auditor: string;
  let open: WebhookEndpointService;
  const closing: (() => Promise<void>)[] = [];
  const stored = () => new WebhookEndpointRepository(t.database).list();

  beforeAll(async () => {
    t = await startTestApp({ env: { WEBHOOK_ALLOW_HTTP: '1' } });
    admin = (await t.apiKeys.create({ name: 'hooks', scopes: ['webhooks:admin'] })).key;
    auditor = (await t.apiKeys.create({ name: 'audit', scopes: ['keys:admin'] })).key;
    open = new WebhookEndpointService(t.database, OPEN, new AuditTrail(t.database, pino({ level: 'silent' })));
  });
  afterEach(async () => {
    while (closing.length > 0) await closing.pop()!();
    for (const endpoint of await stored()) await open.delete(endpoint.id, CLI_ACTOR);
  });
  afterAll(() => t.close());

  const as = (method: string, path: string, body?: unknown) => request(t, method, path, { apiKey: admin, body });

  /** The audit trail's events for endpoint `targetId` (null: refused creates), oldest first. */
  async function auditedFor(targetId: string | null) {
    const page = await request(t, 'GET', '/v1/admin/audit-events?limit=100', { apiKey: auditor });
    expect(page.status).toBe(200);
    return (page.body as any[]).filter((event) => event.targetType === 'webhook_endpoint' && event.targetId === targetId).reverse();
  }

  /** Starts a dispatcher with short limits, delivering to private addresses (the receivers on 127.0.0.1). */
  function dispatch(schedule: number[]) {
    const worker = new WebhookDispatcher({
      database: t.database,
      rules: OPEN,
      retrySchedule: schedule,
      log: { warn: () => undefined, info: () => undefined },
      limits: LIMITS,
    });
    worker.start();
    closing.push(() => worker.close());
  }

  test('when a key without webhooks:admin calls any operation, then 403 insufficient_scope names webhooks:admin, nothing is stored, and each refused change is audited', async () => {
    // An id no endpoint of this file gets, so its refusals stay apart from the endpoints' own events.
    const operations: [string, string, unknown?][] = [
      ['POST', BASE, { url: PUBLIC_URL }],
      ['GET', BASE],
      ['GET', `${BASE}/9999`],
      ['PATCH', `${BASE}/9999`, { enabled: false }],
      ['POST', `${BASE}/9999/rotate-secret`, {}],
      ['DELETE', `${BASE}/9999`],
    ];
    for (const key of [t.apiKey, auditor]) {
      for (const [method, path, body] of operations) {
        const refused = await request(t, method, path, { apiKey: key, body });
        expect({ method, path, status: refused.status, code: refused.body.code }).toEqual({ method, path, status: 403, code: 'FORBIDDEN' });
        expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="pet-store", error="insufficient_scope", scope="webhooks:admin"');
      }
    }
    expect((await request(t, 'GET', BASE, { apiKey: null })).status).toBe(401);
    expect(await stored()).toEqual([]);
    const refusedChanges = (await auditedFor('9999')).map(({ action, outcome }) => `${action} ${outcome}`);
    expect(refusedChanges).toEqual(
      [t.apiKey, auditor].flatMap(() => ['webhook_endpoint.update FORBIDDEN', 'webhook_endpoint.rotate_secret FORBIDDEN', 'webhook_endpoint.delete FORBIDDEN']),
    );
  });

  test('when an endpoint is created, then 201 with Location, its view and its secret, which no later answer and no audit event holds', async () => {
    const created = await as('POST', BASE, { url: PUBLIC_URL, status: 'sold', description: 'CRM' });
    expect(created.status).toBe(201);
    const { secret, ...view } = created.body;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.headers.get('location')).toBe(`${BASE}/${view.id}`);
    expect(view).toEqual({
      id: expect.any(Number),
      url: PUBLIC_URL,
      status: 'sold',
      description: 'CRM',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      enabled: true,
      state: 'enabled',
      disabledReason: null,
      lastSuccessAt: null,
      lastFailureAt: null,
      consecutiveFailures: 0,
      nextAttemptAt: null,
      cursor: expect.any(Number),
      lag: 0,
    });
    const [row] = await stored();
    expect(row.secrets).toEqual([{ secret, expiresAt: null }]);

    const got = await as('GET', created.headers.get('location')!);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(view);
    const listed = await as('GET', BASE);
    expect(listed.body).toEqual([view]);
    const events = await auditedFor(String(view.id));
    expect(events).toEqual([expect.objectContaining({ channel: 'api', action: 'webhook_endpoint.create', outcome: 'success', requestId: expect.any(String) })]);
    for (const answer of [got, listed, { body: events }]) expect(JSON.stringify(answer.body)).not.toContain(secret.slice('whsec_'.length));
  });

  test.each([
    ['a loopback address', 'http://127.0.0.1:9/hook', '127.0.0.1, a loopback address: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS=1 allows it, for development)'],
    [
      'the metadata address',
      'http://169.254.169.254/latest',
      '169.254.169.254, a linkLocal address: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS=1 allows it, for development)',
    ],
    [
      'an IPv4-mapped private address',
      'https://[::ffff:10.0.0.1]/hook',
      '::ffff:a00:1, a private address: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS=1 allows it, for development)',
    ],
    ['a name resolving to loopback', 'http://localhost/hook', /^localhost resolves to .*, a loopback address: refused/],
    ['a user name', 'https://user:pass@1.1.1.1/hook', 'a webhook URL may not hold a user name or password'],
    ['not a URL', 'not a url', '"not a url" is not an absolute URL such as https://example.com/webhooks'],
    ['an ftp URL', 'ftp://1.1.1.1/x', 'ftp: URLs are refused: use https or http'],
  ])(
    'when the URL is %s, then create and update answer 400 BAD_USER_INPUT with the reason, change nothing, and the refusals are audited',
    async (_case, url, reason) => {
      const refused = await as('POST', BASE, { url, description: 'refused' });
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: 'BAD_USER_INPUT', status: 400 });
      if (typeof reason === 'string') expect(refused.body.message).toBe(reason);
      else expect(refused.body.message).toMatch(reason);
      expect(await stored()).toEqual([]);

      const { id } = await open.create({ url: PUBLIC_URL, description: 'before' }, CLI_ACTOR);
      const before = (await as('GET', `${BASE}/${id}`)).body;
      const patched = await as('PATCH', `${BASE}/${id}`, { url, description: 'after' });
      expect(patched.status).toBe(400);
      expect(patched.body.code).toBe('BAD_USER_INPUT');
      expect((await as('GET', `${BASE}/${id}`)).body).toEqual(before);
      expect((await auditedFor(String(id))).map(({ channel, action, outcome }) => [channel, action, outcome])).toEqual([
        ['cli', 'webhook_endpoint.create', 'success'],
        ['api', 'webhook_endpoint.update', 'BAD_USER_INPUT'],
      ]);
      const refusedCreates = await auditedFor(null);
      expect(refusedCreates.at(-1)).toMatchObject({ action: 'webhook_endpoint.create', outcome: 'BAD_USER_INPUT', channel: 'api' });
    },
  );

  test.each([
    ['POST', '', { url: 42 }, /url must be a string/],
    ['POST', '', {}, /url is required/],
    ['POST', '', { url: PUBLIC_URL, status: 'lost' }, /status must be one of: available, pending, sold/],
    ['POST', '', { url: PUBLIC_URL, description: 'x'.repeat(201) }, /description must be at most 200 characters/],
    ['POST', '', { url: PUBLIC_URL, secret: 'whsec_mine' }, /property secret should not exist/],
    ['PATCH', '/{id}', { url: null }, /url must be a string/],
    ['PATCH', '/{id}', { enabled: 'yes' }, /enabled must be a boolean value/],
    ['PATCH', '/{id}', { cursor: 0 }, /property cursor should not exist/],
    ['POST', '/{id}/rotate-secret', { overlap: -1 }, /overlap must not be less than 0/],
    ['POST', '/{id}/rotate-secret', { overlap: 31 * 24 * 3600 }, /overlap must not be greater than 2592000/],
    ['GET', '/abc', undefined, /id must be a positive integer/],
    ['DELETE', '/0', undefined, /id must be a positive integer/],
  ])('when %s %s gets %j, then 400 BAD_USER_INPUT says why, and nothing changes', async (method, suffix, body, message) => {
    const { id } = await open.create({ url: PUBLIC_URL }, CLI_ACTOR);
    const before = await stored();
    const answer = await as(method, `${BASE}${suffix.replace('{id}', String(id))}`, body);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('BAD_USER_INPUT');
    expect(answer.body.message).toMatch(message);
    expect(await stored()).toEqual(before);
  });

  test('when no endpoint has the id, then get, update, rotate-secret and delete answer 404 NOT_FOUND, and the refusals are audited', async () => {
    const missing = 987654;
    for (const [method, path, body] of [
      ['GET', `${BASE}/${missing}`],
      ['PATCH', `${BASE}/${missing}`, { description: 'x' }],
      ['POST', `${BASE}/${missing}/rotate-secret`, {}],
      ['DELETE', `${BASE}/${missing}`],
    ] as const) {
      const answer = await as(method, path, body);
      expect({ method, status: answer.status, body: answer.body }).toEqual({
        method,
        status: 404,
        body: { code: 'NOT_FOUND', status: 404, message: `No webhook endpoint has id ${missing}.` },
      });
    }
    expect((await auditedFor(String(missing))).map(({ action, outcome }) => [action, outcome])).toEqual([
      ['webhook_endpoint.update', 'NOT_FOUND'],
      ['webhook_endpoint.rotate_secret', 'NOT_FOUND'],
      ['webhook_endpoint.delete', 'NOT_FOUND'],
    ]);
  });

  test('when there are more endpoints than a page, then they are listed by ascending id through Link, and a cursor of another list is refused', async () => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push((await open.create({ url: `${PUBLIC_URL}/${i}` }, CLI_ACTOR)).id);
    const seen: number[] = [];
    let path: string | undefined = `${BASE}?limit=2`;
    while (path) {
      const page = await as('GET', path);
      expect(page.status).toBe(200);
      expect(page.body.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.map((endpoint: { id: number }) => endpoint.id));
      path = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1];
    }
    expect(seen).toEqual(ids);
    const other = await as('GET', `${BASE}?after=${encodeIdCursor('audit-events', ids[0])}`);
    expect(other.status).toBe(400);
    expect(other.body.message).toMatch(/after must be a cursor from a previous page of webhook-endpoints/);
  });

  test('when an endpoint is patched, then each field named changes, null clears status and description, absent ones stay, and each update is audited', async () => {
    const { id } = await open.create({ url: PUBLIC_URL, status: 'sold', description: 'CRM' }, CLI_ACTOR);
    const moved = await as('PATCH', `${BASE}/${id}`, { url: 'https://8.8.8.8/new', status: 'pending' });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ id, url: 'https://8.8.8.8/new', status: 'pending', description: 'CRM', enabled: true });
    const cleared = await as('PATCH', `${BASE}/${id}`, { status: null, description: null });
    expect(cleared.body).toMatchObject({ url: 'https://8.8.8.8/new', status: null, description: null });
    expect((await as('PATCH', `${BASE}/${id}`, {})).body).toEqual(cleared.body);
    const disabled = await as('PATCH', `${BASE}/${id}`, { enabled: false });
    expect(disabled.body).toMatchObject({ enabled: false, state: 'disabled', disabledReason: 'disabled by an operator' });
    expect((await as('GET', `${BASE}/${id}`)).body).toEqual(disabled.body);
    const updates = (await auditedFor(String(id))).filter((event) => event.action === 'webhook_endpoint.update');
    expect(updates.map(({ channel, outcome, actorKeyId }) => [channel, outcome, typeof actorKeyId])).toEqual(Array(4).fill(['api', 'success', 'number']));
  });

  test('when a secret is rotated, then 200 gives the new one once and the end of the overlap, the old one signs until then, and no answer shows it again', async () => {
    const { id, secret: first } = await open.create({ url: PUBLIC_URL }, CLI_ACTOR);
    const asked = Date.now();
    const rotated = await as('POST', `${BASE}/${id}/rotate-secret`, { overlap: 3600 });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ id, secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/), previousSecretsUntil: expect.any(String) });
    expect(rotated.body.secret).not.toBe(first);
    const until = Date.parse(rotated.body.previousSecretsUntil);
    expect(until - asked).toBeGreaterThanOrEqual(3600_000 - 1000);
    expect(until - asked).toBeLessThanOrEqual(3600_000 + 5000);
    const [row] = await stored();
    expect(row.secrets).toEqual([
      { secret: rotated.body.secret, expiresAt: null },
      { secret: first, expiresAt: rotated.body.previousSecretsUntil },
    ]);
    const byDefault = await as('POST', `${BASE}/${id}/rotate-secret`, {});
    expect(Date.parse(byDefault.body.previousSecretsUntil) - Date.now()).toBeGreaterThan(WEBHOOK_LIMITS.defaultRotateOverlapMs - 10_000);
    const shown = JSON.stringify([(await as('GET', `${BASE}/${id}`)).body, (await as('GET', BASE)).body, await auditedFor(String(id))]);
    for (const secret of [first, rotated.body.secret, byDefault.body.secret]) expect(shown).not.toContain(secret.slice('whsec_'.length));
    expect((await auditedFor(String(id))).filter((event) => event.action === 'webhook_endpoint.rotate_secret')).toHaveLength(2);
  });

  test('when an endpoint is deleted, then 204, it is gone (404), a second delete is 404, and the delete is audited', async () => {
    const { id } = await open.create({ url: PUBLIC_URL }, CLI_ACTOR);
    const deleted = await as('DELETE', `${BASE}/${id}`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expect((await as('GET', `${BASE}/${id}`)).status).toBe(404);
    expect((await as('DELETE', `${BASE}/${id}`)).status).toBe(404);
    expect((await auditedFor(String(id))).map(({ action, outcome }) => [action, outcome])).toEqual([
      ['webhook_endpoint.create', 'success'],
      ['webhook_endpoint.delete', 'success'],
      ['webhook_endpoint.delete', 'NOT_FOUND'],
    ]);
  });

  test('when a method an endpoint path does not serve is used, then 405 with Allow', async () => {
    expect((await as('PUT', BASE, {})).headers.get('allow')).toBe('GET, HEAD, POST');
    expect((await as('POST', `${BASE}/1`, {})).headers.get('allow')).toBe('DELETE, GET, HEAD, PATCH');
    expect((await as('GET', `${BASE}/1/rotate-secret`)).headers.get('allow')).toBe('POST');
  });

  test('when deliveries fail until the endpoint is disabled, then its health says so; PATCH enabled true resumes it from the failed event, and the health follows', async () => {
    let healthy = false;
    const hook = await startReceiver(() => ({ status: healthy ? 204 : 500 }));
    closing.push(hook.close);
    const { id } = await open.create({ url: hook.url }, CLI_ACTOR);
    dispatch([0, 0.05]);
    await createPet(t, { name: 'First' });
    await until(async () => (await as('GET', `${BASE}/${id}`)).body.state === 'disabled');
    const failed = (await as('GET', `${BASE}/${id}`)).body;
    expect(failed).toMatchObject({
      enabled: false,
      disabledReason: 'retries exhausted',
      consecutiveFailures: 2,
      lastSuccessAt: null,
      lastFailureAt: expect.any(String),
      nextAttemptAt: null,
      lag: 1,
    });
    await createPet(t, { name: 'Second' });
    await sleep(200);
    expect(hook.received).toHaveLength(2);
    expect((await as('GET', `${BASE}/${id}`)).body.lag).toBe(2);

    healthy = true;
    const resumed = await as('PATCH', `${BASE}/${id}`, { enabled: true });
    expect(resumed.body).toMatchObject({ enabled: true, state: 'enabled', disabledReason: null, consecutiveFailures: 0 });
    await until(async () => (await as('GET', `${BASE}/${id}`)).body.lag === 0);
    expect(hook.received.map((delivery) => JSON.parse(delivery.body).pet.name)).toEqual(['First', 'First', 'First', 'Second']);
    const caughtUp = (await as('GET', `${BASE}/${id}`)).body;
    expect(caughtUp).toMatchObject({ enabled: true, consecutiveFailures: 0, lastSuccessAt: expect.any(String), lastFailureAt: failed.lastFailureAt, lag: 0 });
    expect(Date.parse(caughtUp.lastSuccessAt)).toBeGreaterThan(Date.parse(failed.lastFailureAt));
  });

  test('when an operator disables an endpoint, then it gets no further event until enabled, then every one it missed, in order', async () => {
    const hook = await startReceiver(() => ({ status: 204 }));
    closing.push(hook.close);
    const { id } = await open.create({ url: hook.url }, CLI_ACTOR);
    dispatch([0, 0.05]);
    await createPet(t, { name: 'Before' });
    await until(() => hook.received.length === 1);
    expect((await as('PATCH', `${BASE}/${id}`, { enabled: false })).body.state).toBe('disabled');
    await createPet(t, { name: 'While disabled' });
    await sleep(300);
    expect(hook.received).toHaveLength(1);
    expect((await as('PATCH', `${BASE}/${id}`, { enabled: true })).body.state).toBe('enabled');
    await until(() => hook.received.length === 2);
    expect(hook.received.map((delivery) => JSON.parse(delivery.body).pet.name)).toEqual(['Before', 'While disabled']);
  });
});

describe('webhook endpoints seen by two instances on one database', () => {
  // MySQL only: two apps need a shared database.
  testOnMysql('when one instance changes an endpoint, then the other reads the same endpoint at once', async () => {
    const { database, drop } = await createTestDatabase();
    const first = await startTestApp({ database });
    const second = await startTestApp({ database });
    try {
      const admin = (await first.apiKeys.create({ name: 'hooks', scopes: ['webhooks:admin'] })).key;
      const created = await request(first, 'POST', BASE, { apiKey: admin, body: { url: PUBLIC_URL, description: 'shared' } });
      expect(created.status).toBe(201);
      const { secret: _shownOnce, ...view } = created.body;
      const read = async (app: TestApp, path: string) => (await request(app, 'GET', path, { apiKey: admin })).body;
      expect(await read(second, `${BASE}/${view.id}`)).toEqual(view);
      expect(await read(second, BASE)).toEqual(await read(first, BASE));
      const patched = await request(second, 'PATCH', `${BASE}/${view.id}`, { apiKey: admin, body: { enabled: false } });
      expect(await read(first, `${BASE}/${view.id}`)).toEqual(patched.body);
      expect((await request(first, 'DELETE', `${BASE}/${view.id}`, { apiKey: admin })).status).toBe(204);
      expect((await request(second, 'GET', `${BASE}/${view.id}`, { apiKey: admin })).status).toBe(404);
    } finally {
      await first.close();
      await second.close();
      await drop();
    }
  });
});
