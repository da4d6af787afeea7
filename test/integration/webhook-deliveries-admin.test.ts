import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { AuditTrail, CLI_ACTOR } from '../../src/audit/audit-trail';
import { withinDeadline } from '../../src/database/database-deadline';
import { encodeEventCursor } from '../../src/pets/pet-cursor';
import { encodeIdCursor } from '../../src/validation/opaque-cursor';
import { WebhookAttemptRepository } from '../../src/webhooks/webhook-attempt.repository';
import { WebhookEndpoint } from '../../src/webhooks/webhook-endpoint.entity';
import { WebhookEndpointService } from '../../src/webhooks/webhook-endpoint.service';
import { WebhookRedelivery } from '../../src/webhooks/webhook-redelivery.entity';
import { type RecoveryState, WebhookRecovery } from '../../src/webhooks/webhook-recovery.entity';
import { WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher';
import { countStatements } from '../helpers/statement-counter';
import { createTestDatabase, testOnMysql } from '../helpers/test-database';
import { type TestApp, createPet, request, settleFeed, startTestApp } from '../helpers/test-app';
import { type Answer, FAST_RETRIES, FAST_WEBHOOK_LIMITS, OPEN_TARGETS, type ReceivedDelivery, startReceiver, until } from '../helpers/webhook-receiver';

const LIMITS = FAST_WEBHOOK_LIMITS;
const OPEN = OPEN_TARGETS;
const SCHEDULE = [...FAST_RETRIES];
/** A retry an hour away: the feed's stream stays on its failed event for the whole test. */
const STUCK = [0, 3600];
const silent = { warn: () => undefined, info: () => undefined };
const idOf = (delivery: ReceivedDelivery) => delivery.headers['webhook-id'] as string;

describe('webhook delivery attempts, redeliveries and recoveries (docs/admin.md), real receivers and dispatchers', () => {
  let t: TestApp;
  let admin: string;
  let endpoints: WebhookEndpointService;
  const closing: (() => Promise<void>)[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    admin = (await t.apiKeys.create({ name: 'hooks', scopes: ['webhooks:admin', 'keys:admin'] })).key;
    endpoints = new WebhookEndpointService(t.database, OPEN, new AuditTrail(t.database, t.app.log));
  });
  afterEach(async () => {
    while (closing.length > 0) await closing.pop()!();
    for (const endpoint of (await endpoints.list({ limit: 100 })).items) await endpoints.delete(endpoint.id, CLI_ACTOR);
  });
  afterAll(() => t.close());

  function dispatcher(schedule: number[] = SCHEDULE, limits = LIMITS) {
    const worker = new WebhookDispatcher({ database: t.database, rules: OPEN, retrySchedule: schedule, log: silent, limits });
    worker.start();
    closing.push(() => worker.close());
    return worker;
  }

  async function receiver(answer?: (n: number, delivery: ReceivedDelivery) => Answer | Promise<Answer>) {
    const started = await startReceiver(answer);
    closing.push(started.close);
    return started;
  }

  const admin$ = (method: string, path: string, body?: unknown) => request(t, method, `/v1/admin/webhook-endpoints${path}`, { apiKey: admin, body });
  const attemptsOf = async (id: number, query = '') => (await admin$('GET', `/${id}/attempts?limit=100${query}`)).body as any[];
  const cursorOf = async (id: number) => (await endpoints.get(id)).cursor;
  /** Another instance claims endpoint `id` for an hour (its lease looked expired to it), or, with null, lets it go. */
  const leaseTo = (id: number, holder: string | null) =>
    withinDeadline(t.database, (manager) =>
      manager
        .getRepository(WebhookEndpoint)
        .update({ id }, holder === null ? { leaseHolder: null } : { leaseHolder: holder, leaseExpiresAt: () => t.database.dialect.later(3600) }),
    );

  /** Creates `n` pets and waits until `hook` has `total` requests; returns the new events' ids, in feed order. */
  async function delivered(hook: { received: ReceivedDelivery[] }, n: number, total = n): Promise<string[]> {
    for (let i = 0; i < n; i++) await createPet(t, { name: `pet ${i}` });
    await until(() => hook.received.length >= total);
    const events = (await request(t, 'GET', '/v1/events?limit=100')).body as { id: string }[];
    return events.slice(-n).map((event) => event.id);
  }

  describe('listWebhookAttempts', () => {
    test('when attempts fail (500 with a long body, a timeout, a refused connection) and then succeed, then each is recorded with its status or error class and the first KiB of the answer', async () => {
      const long = `${'é'.repeat(600)}tail`;
      const answers: Answer[] = [{ status: 500, body: long }, 'hang', { status: 200, body: '{"received":true}' }];
      const hook = await receiver((n) => answers[n] ?? { status: 204 });
      const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      const closed = await receiver();
      await closed.close();
      const refused = await endpoints.create({ url: closed.url }, CLI_ACTOR);
      dispatcher();
      const [eventId] = await delivered(hook, 1, 3);
      await until(async () => (await attemptsOf(id)).length === 3 && (await attemptsOf(refused.id)).length >= 1);

      const [ok, timedOut, failed] = await attemptsOf(id);
      expect(failed).toMatchObject({ endpointId: id, eventId, attempt: 1, trigger: 'delivery', statusCode: 500, error: null });
      // 1,024 bytes of two-byte characters: 512 of them, cut nowhere in the middle of one.
      expect(failed.responseBody).toBe('é'.repeat(512));
      expect(timedOut).toMatchObject({ eventId, attempt: 2, trigger: 'delivery', statusCode: null, error: 'timeout', responseBody: null });
      expect(timedOut.durationMs).toBeGreaterThanOrEqual(LIMITS.attemptTimeoutMs - 10);
      expect(ok).toMatchObject({ eventId, attempt: 3, trigger: 'delivery', statusCode: 200, error: null, responseBody: '{"received":true}' });
      expect(hook.received.map(idOf)).toEqual([eventId, eventId, eventId]);
      for (const attempt of [ok, timedOut, failed]) expect(Date.parse(attempt.startedAt)).toBeGreaterThan(Date.now() - 60_000);
      const [connection] = await attemptsOf(refused.id);
      expect(connection).toMatchObject({ eventId, trigger: 'delivery', statusCode: null, error: 'ECONNREFUSED', responseBody: null });
    });

    test('when an endpoint has more attempts than a page, then they are listed newest first through Link, each once, and eventId keeps one event', async () => {
      const hook = await receiver();
      const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      dispatcher();
      const events = await delivered(hook, 5);
      await until(async () => (await attemptsOf(id)).length === 5);

      const seen: string[] = [];
      let path: string | undefined = `/v1/admin/webhook-endpoints/${id}/attempts?limit=2`;
      while (path) {
        const page = await request(t, 'GET', path, { apiKey: admin });
        expect(page.status).toBe(200);
        seen.push(...page.body.map((attempt: { eventId: string }) => attempt.eventId));
        path = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1];
      }
      expect(seen).toEqual([...events].reverse());
      const filtered = await admin$('GET', `/${id}/attempts?eventId=${events[1]}&limit=1`);
      expect(filtered.body).toHaveLength(1);
      expect(filtered.body[0].eventId).toBe(events[1]);
      expect(filtered.headers.get('link')).toBeNull();

      expect((await admin$('GET', `/${id + 1000}/attempts`)).status).toBe(404);
      expect((await admin$('GET', `/${id}/attempts?after=${encodeIdCursor('audit-events', 5)}`)).body).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect((await admin$('GET', `/${id}/attempts?eventId=nope`)).body).toMatchObject({ code: 'BAD_USER_INPUT' });
      expect((await admin$('GET', '/0/attempts')).body).toMatchObject({ code: 'BAD_USER_INPUT' });
    });

    test('when the feed delivers, then each attempt costs one INSERT, written with the cursor update, and no read', async () => {
      const hook = await receiver();
      await endpoints.create({ url: hook.url }, CLI_ACTOR);
      dispatcher();
      await delivered(hook, 1);
      await sleep(200);
      const statements = countStatements(t.dataSource);
      await delivered(hook, 3, 4);
      await sleep(200);
      expect(statements.count(/^\s*INSERT INTO\s+[`"]?webhook_attempt/i)).toBe(3);
      expect(statements.count(/^\s*SELECT[\s\S]*FROM\s+[`"]?webhook_attempt/i)).toBe(0);
    });
  });

  describe('scopes', () => {
    test('when a key without webhooks:admin asks, then every delivery operation is 403 insufficient_scope', async () => {
      const keysOnly = (await t.apiKeys.create({ name: 'keys', scopes: ['keys:admin'] })).key;
      for (const apiKey of [t.apiKey, keysOnly]) {
        const answers = [
          await request(t, 'GET', '/v1/admin/webhook-endpoints/1/attempts', { apiKey }),
          await request(t, 'POST', '/v1/admin/webhook-endpoints/1/redeliveries', { apiKey, body: { eventId: encodeEventCursor(1) } }),
          await request(t, 'POST', '/v1/admin/webhook-endpoints/1/recoveries', { apiKey, body: { since: '2026-01-01T00:00:00Z' } }),
          await request(t, 'GET', '/v1/admin/webhook-endpoints/1/recoveries/1', { apiKey }),
        ];
        for (const answer of answers) {
          expect(answer.status).toBe(403);
          expect(answer.headers.get('www-authenticate')).toContain('scope="webhooks:admin"');
        }
      }
    });
  });

  describe('createWebhookRedelivery', () => {
    test('when an event is redelivered, then the dispatcher sends it again with the same webhook-id, signed with the current secret, records it, and leaves the cursor', async () => {
      const hook = await receiver();
      const { id, secret } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      dispatcher();
      const [first, second] = await delivered(hook, 2);
      await until(async () => (await cursorOf(id)) > 0);
      const cursor = await cursorOf(id);

      const queued = await admin$('POST', `/${id}/redeliveries`, { eventId: first });
      expect(queued.status).toBe(202);
      expect(queued.body).toMatchObject({ endpointId: id, eventId: first });
      await until(() => hook.received.length === 3);
      const again = hook.received[2];
      expect(idOf(again)).toBe(first);
      expect(new Webhook(secret).verify(again.body, again.headers as Record<string, string>)).toMatchObject({ id: first });
      await until(async () => (await attemptsOf(id)).length === 3);
      expect((await attemptsOf(id))[0]).toMatchObject({ eventId: first, trigger: 'redelivery', attempt: 1, statusCode: 204 });
      expect(await cursorOf(id)).toBe(cursor);
      expect(hook.received.map(idOf)).toEqual([first, second, first]);

      const trail = await request(t, 'GET', '/v1/admin/audit-events?limit=1', { apiKey: admin });
      expect(trail.body[0]).toMatchObject({ action: 'webhook_endpoint.redeliver', targetId: String(id), outcome: 'success', actorKeyId: expect.any(Number) });
    });

    test('when another instance takes the endpoint during a redelivery, then this one records that redelivery and stops there, and the holder makes the rest, each once', async () => {
      const queued = () => withinDeadline(t.database, (manager) => manager.getRepository(WebhookRedelivery).countBy({ endpointId: id }));
      const control = { takeAt: -1 };
      const hook = await receiver(async (n) => {
        if (n === control.takeAt) await leaseTo(id, randomUUID());
        return { status: 204 };
      });
      const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      dispatcher();
      const events = await delivered(hook, 3);
      await until(async () => (await attemptsOf(id)).length === 3);
      const sent = hook.received.length;
      control.takeAt = sent;

      for (const eventId of events) expect((await admin$('POST', `/${id}/redeliveries`, { eventId })).status).toBe(202);
      await until(async () => (await attemptsOf(id)).length === 4);
      await sleep(300);
      expect(hook.received.slice(sent).map(idOf)).toEqual([events[0]]);
      expect((await attemptsOf(id))[0]).toMatchObject({ eventId: events[0], trigger: 'redelivery', statusCode: 204 });
      expect(await queued()).toBe(2);

      // The other instance lets the endpoint go: this dispatcher claims it again and makes the other two.
      await leaseTo(id, null);
      await until(async () => (await queued()) === 0);
      expect(hook.received.slice(sent).map(idOf)).toEqual(events);
    });

    test('when the event id is malformed, past the head, or the endpoint unknown, then 400 or 404, nothing is queued, and each refusal is audited', async () => {
      await createPet(t);
      await settleFeed(t);
      const hook = await receiver();
      const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      const malformed = await admin$('POST', `/${id}/redeliveries`, { eventId: 'not-an-event' });
      expect(malformed.status).toBe(400);
      expect(malformed.body.code).toBe('BAD_USER_INPUT');
      expect((await admin$('POST', `/${id}/redeliveries`, {})).body.message).toContain('eventId is required');
      expect((await admin$('POST', `/${id}/redeliveries`, { eventId: encodeEventCursor(1), extra: 1 })).status).toBe(400);
      const future = await admin$('POST', `/${id}/redeliveries`, { eventId: encodeEventCursor(1_000_000) });
      expect(future.status).toBe(404);
      expect(future.body.code).toBe('NOT_FOUND');
      const unknown = await admin$('POST', `/${id + 1000}/redeliveries`, { eventId: encodeEventCursor(1) });
      expect(unknown.status).toBe(404);
      const trail = await request(t, 'GET', '/v1/admin/audit-events?limit=5', { apiKey: admin });
      expect(trail.body.slice(0, 5).map((event: any) => [event.action, event.targetId, event.outcome])).toEqual([
        ['webhook_endpoint.redeliver', String(id + 1000), 'NOT_FOUND'],
        ['webhook_endpoint.redeliver', String(id), 'NOT_FOUND'],
        ['webhook_endpoint.redeliver', String(id), 'BAD_USER_INPUT'],
        ['webhook_endpoint.redeliver', String(id), 'BAD_USER_INPUT'],
        ['webhook_endpoint.redeliver', String(id), 'BAD_USER_INPUT'],
      ]);
      dispatcher();
      await sleep(300);
      expect(hook.received).toHaveLength(0);
    });
    test('when the endpoint is disabled, then a redelivery waits, and is made once it is enabled', async () => {
      const hook = await receiver();
      const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      dispatcher();
      const [eventId] = await delivered(hook, 1);
      await t.dataSource.query("UPDATE webhook_endpoint SET state = 'disabled', disabled_reason = 'gone' WHERE id = ?", [id]);
      expect((await admin$('POST', `/${id}/redeliveries`, { eventId })).status).toBe(202);
      await sleep(LIMITS.claimEveryMs * 6);
      expect(hook.received).toHaveLength(1);
      await endpoints.update(id, { enabled: true }, CLI_ACTOR);
      await until(() => hook.received.length === 2);
      expect(idOf(hook.received[1])).toBe(eventId);
    });
  });

  describe('createWebhookRecovery', () => {
    /** An endpoint whose receiver answers 204 until `state.failing`, then 500; and a dispatcher. */
    async function switchable(schedule = STUCK) {
      const state = { failing: false };
      const hook = await receiver(() => ({ status: state.failing ? 500 : 204 }));
      const endpoint = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      dispatcher(schedule);
      return { ...endpoint, state, hook };
    }

    /** Redelivers each of `events` to `id` and waits for their (failed, as the receiver now answers) attempts. */
    async function redeliver(id: number, events: string[]): Promise<void> {
      const before = (await attemptsOf(id)).length;
      for (const eventId of events) expect((await admin$('POST', `/${id}/redeliveries`, { eventId })).status).toBe(202);
      await until(async () => (await attemptsOf(id)).length === before + events.length);
    }

    /** Delivers three events to `id` through `hook`, then fails each once by a redelivery while `control.failing`; returns them, and a time before those failures. */
    async function threeFailed(id: number, hook: { received: ReceivedDelivery[] }, control: { failing: boolean }) {
      const events = await delivered(hook, 3);
      await until(async () => (await attemptsOf(id)).length === 3);
      const since = new Date().toISOString();
      control.failing = true;
      await redeliver(id, events);
      control.failing = false;
      return { events, since };
    }

    async function recovered(id: number, body: object): Promise<any> {
      const asked = await admin$('POST', `/${id}/recoveries`, body);
      expect(asked.status).toBe(202);
      expect(asked.headers.get('location')).toBe(`/v1/admin/webhook-endpoints/${id}/recoveries/${asked.body.id}`);
      expect(asked.body).toMatchObject({ state: 'queued', events: 0, sent: 0, failed: 0 });
      const location = asked.headers.get('location')!;
      await until(async () => (await request(t, 'GET', location, { apiKey: admin })).body.state === 'done');
      return (await request(t, 'GET', location, { apiKey: admin })).body;
    }

    test('when events failed (two redeliveries and the event the feed is retrying), then a recovery since then resends exactly those, in feed order, counts them, and the feed moves on', async () => {
      const { state, hook, id } = await switchable();
      const events = await delivered(hook, 4);
      await until(async () => (await cursorOf(id)) > 0 && (await attemptsOf(id)).length === 4);
      state.failing = true;
      // Failed before `since`: not resent.
      await redeliver(id, [events[1]]);
      await sleep(20);
      const since = new Date().toISOString();
      await redeliver(id, [events[0], events[2]]);
      const [pending] = await delivered(hook, 1, 8);
      await until(async () => (await attemptsOf(id, `&eventId=${pending}`)).length === 1);
      state.failing = false;
      const sent = hook.received.length;

      const recovery = await recovered(id, { since });
      expect(hook.received.slice(sent).map(idOf)).toEqual([events[0], events[2], pending]);
      expect(recovery).toMatchObject({ endpointId: id, since, after: null, state: 'done', events: 3, sent: 3, failed: 0, reason: null });
      expect(Date.parse(recovery.finishedAt)).toBeGreaterThanOrEqual(Date.parse(recovery.startedAt));
      expect((await attemptsOf(id)).slice(0, 3).map((attempt) => [attempt.eventId, attempt.trigger, attempt.statusCode])).toEqual([
        [pending, 'recovery', 204],
        [events[2], 'recovery', 204],
        [events[0], 'recovery', 204],
      ]);
      // The event the feed was retrying an hour later is delivered: the cursor moved past it, and the next event follows.
      const [next] = await delivered(hook, 1, sent + 4);
      expect(hook.received.map(idOf).at(-1)).toBe(next);
      const trail = await request(t, 'GET', '/v1/admin/audit-events?limit=20', { apiKey: admin });
      expect(trail.body.find((event: any) => event.action === 'webhook_endpoint.recover')).toMatchObject({ targetId: String(id), outcome: 'success' });
    });

    test('when another instance takes the endpoint during a recovery, then this one records that attempt and stops there, and the holder resumes after it', async () => {
      const control = { failing: false, takeAt: -1 };
      const hook = await receiver(async (n) => {
        if (n === control.takeAt) await leaseTo(id, randomUUID());
        return { status: control.failing ? 500 : 204 };
      });
      const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      dispatcher(STUCK);
      const { events, since } = await threeFailed(id, hook, control);
      const sent = hook.received.length;
      control.takeAt = sent;

      const location = (await admin$('POST', `/${id}/recoveries`, { since })).headers.get('location')!;
      await until(async () => (await attemptsOf(id)).length === 7);
      await sleep(300);
      expect(hook.received.slice(sent).map(idOf)).toEqual([events[0]]);
      expect((await attemptsOf(id))[0]).toMatchObject({ eventId: events[0], trigger: 'recovery', statusCode: 204 });
      expect((await request(t, 'GET', location, { apiKey: admin })).body).toMatchObject({ state: 'running', sent: 0, failed: 0 });

      // Its last attempt delivered it: the holder resends the other two.
      await leaseTo(id, null);
      await until(async () => (await request(t, 'GET', location, { apiKey: admin })).body.state === 'done');
      expect(hook.received.slice(sent).map(idOf)).toEqual(events);
      expect((await request(t, 'GET', location, { apiKey: admin })).body).toMatchObject({ events: 2, sent: 2, failed: 0 });
    });

    test('when a recovery names an event, then it resends the failed events after it only; failures are counted', async () => {
      const { state, hook, id } = await switchable();
      const events = await delivered(hook, 4);
      await until(async () => (await attemptsOf(id)).length === 4);
      state.failing = true;
      await redeliver(id, [events[0], events[1], events[3]]);
      const sent = hook.received.length;

      const recovery = await recovered(id, { after: events[0] });
      expect(hook.received.slice(sent).map(idOf)).toEqual([events[1], events[3]]);
      expect(recovery).toMatchObject({ since: null, after: events[0], state: 'done', events: 2, sent: 0, failed: 2 });
    });

    test('when a recovery is asked badly, then 400; for an unknown endpoint or event, 404; an unknown recovery is 404', async () => {
      const { id } = await endpoints.create({ url: 'http://127.0.0.1:9/hook' }, CLI_ACTOR);
      expect((await admin$('POST', `/${id}/recoveries`, {})).body.code).toBe('BAD_USER_INPUT');
      expect((await admin$('POST', `/${id}/recoveries`, { since: 'yesterday' })).body.code).toBe('BAD_USER_INPUT');
      expect((await admin$('POST', `/${id}/recoveries`, { since: '2026-01-01T00:00:00Z', after: encodeEventCursor(1) })).body.code).toBe('BAD_USER_INPUT');
      expect((await admin$('POST', `/${id}/recoveries`, { after: encodeEventCursor(1_000_000) })).status).toBe(404);
      expect((await admin$('POST', `/${id + 1000}/recoveries`, { since: '2026-01-01T00:00:00Z' })).status).toBe(404);
      expect((await admin$('GET', `/${id}/recoveries/999999`)).status).toBe(404);
      const trail = await request(t, 'GET', '/v1/admin/audit-events?limit=1', { apiKey: admin });
      expect(trail.body[0]).toMatchObject({ action: 'webhook_endpoint.recover', targetId: String(id + 1000), outcome: 'NOT_FOUND' });
    });

    test('when the dispatcher closes during a recovery and another starts (a restart), then the recovery resumes after the last event it recorded, and ends done', async () => {
      const control = { failing: false, hangAt: -1 };
      const hook = await receiver((n) => (n === control.hangAt ? 'hang' : { status: control.failing ? 500 : 204 }));
      const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      // Attempts long enough to be cut by the close, not by their timeout.
      const patient = { ...LIMITS, attemptTimeoutMs: 10_000 };
      const first = dispatcher(STUCK, patient);
      const { events, since } = await threeFailed(id, hook, control);
      const sent = hook.received.length;
      // The recovery's second request is never answered.
      control.hangAt = sent + 1;

      const asked = await admin$('POST', `/${id}/recoveries`, { since });
      const location = asked.headers.get('location')!;
      await until(() => hook.received.length === sent + 2);
      const progress = await request(t, 'GET', location, { apiKey: admin });
      expect(progress.body).toMatchObject({ state: 'running', events: 3, sent: 1, failed: 0, finishedAt: null });
      expect(progress.body.startedAt).toEqual(expect.any(String));
      await first.close();
      control.hangAt = -1;
      dispatcher(STUCK, patient);
      await until(async () => (await request(t, 'GET', location, { apiKey: admin })).body.state === 'done');

      expect(hook.received.slice(sent).map(idOf)).toEqual([events[0], events[1], events[1], events[2]]);
      expect((await request(t, 'GET', location, { apiKey: admin })).body).toMatchObject({ events: 3, sent: 3, failed: 0, startedAt: progress.body.startedAt });
      // The attempt cut by the close is not one: three by the recovery.
      expect((await attemptsOf(id)).filter((attempt) => attempt.trigger === 'recovery').map((attempt) => attempt.eventId)).toEqual([...events].reverse());
    });
  });

  describe('retention', () => {
    test('when attempts are older than the age or past the count of their endpoint, then the purge deletes them, and the orphans of removed endpoints', async () => {
      const attempts = new WebhookAttemptRepository(t.database);
      const added = [];
      for (let i = 0; i < 3; i++) added.push(await endpoints.create({ url: 'http://127.0.0.1:9/hook' }, CLI_ACTOR));
      const [a, b, gone] = added;
      await endpoints.delete(gone.id, CLI_ACTOR);
      const now = Date.now();
      const purge = () => attempts.purge({ now: new Date(now), maxAgeMs: 60_000, maxPerEndpoint: 3 });
      // What the other tests left: removed endpoints' attempts.
      await purge();
      const row = (endpointId: number, eventSeq: number, ageMs: number) => ({
        endpointId,
        eventSeq,
        attempt: 1,
        trigger: 'delivery' as const,
        startedAt: new Date(now - ageMs),
        durationMs: 5,
        statusCode: 204,
        error: null,
        responseBody: 'ok',
      });
      await withinDeadline(t.database, async (manager) => {
        // a: two too old, then five recent; b: three recent; the removed endpoint: one.
        for (const [seq, age] of [
          [1, 90_000],
          [2, 80_000],
          [3, 5_000],
          [4, 4_000],
          [5, 3_000],
          [6, 2_000],
          [7, 1_000],
        ])
          await attempts.insert(manager, row(a.id, seq, age));
        for (const seq of [1, 2, 3]) await attempts.insert(manager, row(b.id, seq, 1_000));
        await attempts.insert(manager, row(gone.id, 1, 1_000));
      });
      expect(await purge()).toEqual({ byAge: 2, byCount: 2, orphaned: 1, recoveries: 0 });
      const seqsOf = async (endpointId: number) => (await attempts.list(endpointId, { limit: 100 })).map((attempt) => attempt.eventSeq);
      expect(await seqsOf(a.id)).toEqual([7, 6, 5]);
      expect(await seqsOf(b.id)).toEqual([3, 2, 1]);
      expect(await seqsOf(gone.id)).toEqual([]);
      expect(await purge()).toEqual({ byAge: 0, byCount: 0, orphaned: 0, recoveries: 0 });
    });

    test('when a recovery finished before the age, then the purge deletes it; a newer or unfinished one stays', async () => {
      const attempts = new WebhookAttemptRepository(t.database);
      const { id } = await endpoints.create({ url: 'http://127.0.0.1:9/hook' }, CLI_ACTOR);
      const now = Date.now();
      const recovery = (state: RecoveryState, finishedAgoMs: number | null) => ({
        endpointId: id,
        since: null,
        afterSeq: 0,
        upToSeq: 0,
        state,
        cursor: 0,
        requestedAt: new Date(now - 100_000),
        finishedAt: finishedAgoMs === null ? null : new Date(now - finishedAgoMs),
      });
      const rows = t.dataSource.getRepository(WebhookRecovery);
      await rows.insert([recovery('done', 90_000), recovery('failed', 90_000), recovery('done', 1_000), recovery('running', null)]);
      expect((await attempts.purge({ now: new Date(now), maxAgeMs: 60_000, maxPerEndpoint: 3 })).recoveries).toBe(2);
      expect((await rows.find({ where: { endpointId: id } })).map((row) => row.state).sort()).toEqual(['done', 'running']);
    });
  });
});

describe('webhook deliveries seen by two instances on one database', () => {
  // MySQL only: two apps need a shared database.
  testOnMysql('when one instance delivers and another is asked, then both read the same attempts, recovery and audit trail', async () => {
    const { database, drop } = await createTestDatabase();
    const first = await startTestApp({ database });
    const second = await startTestApp({ database });
    const hook = await startReceiver(() => ({ status: 500, body: 'down' }));
    const worker = new WebhookDispatcher({ database: first.database, rules: OPEN, retrySchedule: STUCK, log: silent, limits: LIMITS });
    try {
      const admin = (await first.apiKeys.create({ name: 'ops', scopes: ['webhooks:admin', 'keys:admin'] })).key;
      const endpoints = new WebhookEndpointService(first.database, OPEN, new AuditTrail(first.database, first.app.log));
      const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      worker.start();
      await createPet(first, { name: 'Shared' });
      const read = async (app: TestApp, path: string) => (await request(app, 'GET', path, { apiKey: admin })).body;
      const attempts = `/v1/admin/webhook-endpoints/${id}/attempts`;
      await until(async () => (await read(second, attempts)).length === 1);
      expect(await read(first, attempts)).toEqual(await read(second, attempts));
      const [event] = (await request(first, 'GET', '/v1/events')).body as { id: string }[];
      const asked = await request(second, 'POST', `/v1/admin/webhook-endpoints/${id}/recoveries`, { apiKey: admin, body: { after: event.id } });
      expect(asked.status).toBe(202);
      const location = asked.headers.get('location')!;
      expect(await read(first, location)).toEqual(await read(second, location));
      expect(await read(first, '/v1/admin/audit-events')).toEqual(await read(second, '/v1/admin/audit-events'));
    } finally {
      await worker.close();
      await hook.close();
      await first.close();
      await second.close();
      await drop();
    }
  });
});
