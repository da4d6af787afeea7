import { createServer } from 'node:http';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { Webhook } from 'standardwebhooks';
import { Agent, request as undiciRequest } from 'undici';
import { AuditTrail, CLI_ACTOR } from '../../src/audit/audit-trail';
import { RequestStatementsSampler, samplerOf } from '../../src/observability/tracing-sdk';
import { WebhookEndpointRepository } from '../../src/webhooks/webhook-endpoint.repository';
import { WebhookEndpointService } from '../../src/webhooks/webhook-endpoint.service';
import { WebhookTargetError, checkedLookup } from '../../src/webhooks/webhook-target.policy';
import { WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher';
import { createWebhookMetrics } from '../../src/webhooks/webhook.metrics';
import { openDatabase } from '../../src/database/open-database';
import { PetFeed } from '../../src/events/pet-feed';
import { PetFeedRepository } from '../../src/events/pet-feed.repository';
import { countStatements } from '../helpers/statement-counter';
import { createTestDatabase } from '../helpers/test-database';
import { type TestApp, createPet, request, startTestApp } from '../helpers/test-app';
import { FAST_RETRIES, FAST_WEBHOOK_LIMITS, OPEN_TARGETS, type ReceivedDelivery, startReceiver, until } from '../helpers/webhook-receiver';

const LIMITS = FAST_WEBHOOK_LIMITS;
const OPEN = OPEN_TARGETS;
const SCHEDULE = [...FAST_RETRIES];

/** Verifies `delivery` with `secret` by the standardwebhooks library; returns the parsed event. */
function verified(secret: string, delivery: ReceivedDelivery): unknown {
  return new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>);
}

describe('webhook deliveries (real receivers on 127.0.0.1, the app on the test database)', () => {
  let t: TestApp;
  let endpoints: WebhookEndpointService;
  const closing: (() => Promise<void>)[] = [];
  const warnings: string[] = [];
  const warnFields: object[] = [];
  const log = {
    warn: (fields: object, message?: string) => {
      warnFields.push(fields);
      warnings.push(message ?? '');
    },
    info: () => undefined,
  };

  beforeAll(async () => {
    t = await startTestApp();
    endpoints = new WebhookEndpointService(t.database, OPEN, new AuditTrail(t.database, t.app.log));
  });
  /** The endpoints as stored (cursor, attempt…), by id. */
  const stored = () => new WebhookEndpointRepository(t.database).list();
  afterEach(async () => {
    while (closing.length > 0) await closing.pop()!();
    for (const endpoint of await stored()) await endpoints.delete(endpoint.id, CLI_ACTOR);
  });
  afterAll(() => t.close());

  function dispatcher(options: { rules?: typeof OPEN; schedule?: number[]; limits?: typeof LIMITS } = {}) {
    const registry = new Registry();
    const metrics = createWebhookMetrics(registry, new WebhookEndpointRepository(t.database));
    const worker = new WebhookDispatcher({
      database: t.database,
      rules: options.rules ?? OPEN,
      retrySchedule: options.schedule ?? SCHEDULE,
      log,
      metrics,
      limits: options.limits ?? LIMITS,
    });
    worker.start();
    closing.push(() => worker.close());
    const count = async (name: string, labels: Record<string, string>) => {
      const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
      const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
      return value?.value ?? 0;
    };
    return { worker, registry, count };
  }

  async function receiver(...args: Parameters<typeof startReceiver>) {
    const started = await startReceiver(...args);
    closing.push(started.close);
    return started;
  }

  test('when an endpoint answers 500 three times, then 200, then it receives every pet in feed order, each signed, the same JSON as GET /v1/events', async () => {
    const hook = await receiver((n) => ({ status: n < 3 ? 500 : 200 }));
    const { secret } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
    const { count } = dispatcher();
    const names = ['A', 'B', 'C', 'D', 'E'];
    for (const name of names) await createPet(t, { name });
    await until(() => new Set(hook.received.map((d) => d.headers['webhook-id'])).size === names.length && hook.received.length >= names.length + 3);
    await sleep(200);

    const events = hook.received.map((delivery) => verified(secret, delivery) as { id: string; pet: { name: string } });
    // The three failures were the first event's: its repeats carry its webhook-id.
    expect(hook.received.slice(0, 4).map((d) => d.headers['webhook-id'])).toEqual(Array(4).fill(events[0].id));
    const delivered = events.slice(3);
    expect(delivered.map((event) => event.pet.name)).toEqual(names);
    expect(hook.received.slice(3).map((d) => d.headers['webhook-id'])).toEqual(delivered.map((event) => event.id));
    for (const delivery of hook.received) {
      expect(delivery.headers['content-type']).toBe('application/json');
      expect(delivery.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    }
    const page = await request(t, 'GET', `/v1/events?limit=100`);
    expect(delivered).toEqual(page.body.slice(-names.length));
    expect(await count('petstore_webhook_deliveries_total', { outcome: 'http_error' })).toBe(3);
    expect(await count('petstore_webhook_deliveries_total', { outcome: 'success' })).toBe(names.length);
    const [listed] = await stored();
    expect(listed).toMatchObject({ state: 'enabled', failuresInRow: 0, attempt: 0 });
    expect(listed.lastSuccessAt).toBeInstanceOf(Date);
    expect(listed.lastFailureAt).toBeInstanceOf(Date);
    expect(await count('petstore_webhook_lag_positions', { endpoint: String(listed.id) })).toBe(0);
  });

  test('when the feed advances, then the dispatcher delivers at once, not at its next claim (a minute away here), and counts the endpoint as a stream of the feed', async () => {
    const hook = await receiver(() => ({ status: 204 }));
    await endpoints.create({ url: hook.url }, CLI_ACTOR);
    // This instance's view of the feed, as the app's: it reads each new event within PET_FEED_LIMITS.followEveryMs.
    const feed = new PetFeed(new PetFeedRepository(t.database), log);
    await feed.start();
    closing.push(() => feed.close());
    const calls = { opened: 0, closed: 0, delivered: 0 };
    const worker = new WebhookDispatcher({
      database: t.database,
      rules: OPEN,
      retrySchedule: SCHEDULE,
      log,
      limits: { ...LIMITS, claimEveryMs: 60_000 },
      following: {
        onAdvance: (listener) => feed.onAdvance(listener),
        opened: () => void calls.opened++,
        closed: () => void calls.closed++,
        delivered: () => void calls.delivered++,
      },
    });
    worker.start();
    closing.push(() => worker.close());
    // Its first claim, at start, found nothing to deliver; only the feed's advances can wake it now.
    await sleep(200);
    const names = ['woken 1', 'woken 2', 'woken 3'];
    for (const name of names) {
      await createPet(t, { name });
      await until(() => hook.received.some((delivery) => JSON.parse(delivery.body).pet.name === name), 5_000);
    }
    expect(hook.received.map((delivery) => JSON.parse(delivery.body).pet.name)).toEqual(names);
    // Counted once the receiver's answer is in, a moment after the receiver has the delivery.
    await until(() => calls.delivered === names.length && calls.closed === calls.opened);
    expect(calls.opened).toBeGreaterThanOrEqual(1);
  });

  test('when an endpoint answers 410, then it is disabled after one attempt, counted, and logged without its query (its token)', async () => {
    const hook = await receiver(() => ({ status: 410 }));
    await endpoints.create({ url: `${hook.url}?token=receiver-secret` }, CLI_ACTOR);
    const { count } = dispatcher();
    await createPet(t);
    await createPet(t);
    await until(async () => (await stored())[0].state === 'disabled');
    await sleep(300);
    expect(hook.received).toHaveLength(1);
    expect((await stored())[0]).toMatchObject({ state: 'disabled', disabledReason: 'gone' });
    expect(await count('petstore_webhook_endpoints_disabled_total', { reason: 'gone' })).toBe(1);
    const logged = JSON.stringify(warnFields);
    expect(logged).toContain(hook.url);
    expect(logged).not.toContain('receiver-secret');
  });

  test('when every attempt fails (500, then a timeout), then the last retry disables the endpoint, logged at warn and counted; enable resumes from the failed event', async () => {
    let healthy = false;
    const hook = await receiver((n) => (healthy ? { status: 200 } : n % 2 === 0 ? { status: 500 } : 'hang'));
    await endpoints.create({ url: hook.url }, CLI_ACTOR);
    const { count } = dispatcher({ schedule: [0, 0.05, 0.05] });
    await createPet(t, { name: 'First' });
    await until(async () => (await stored())[0].state === 'disabled');
    expect(hook.received).toHaveLength(3);
    const [disabled] = await stored();
    expect(disabled).toMatchObject({ disabledReason: 'retries exhausted', failuresInRow: 3 });
    expect(await count('petstore_webhook_endpoints_disabled_total', { reason: 'retries_exhausted' })).toBe(1);
    expect(await count('petstore_webhook_deliveries_total', { outcome: 'timeout' })).toBe(1);
    expect(warnings.some((w) => w.includes(`endpoint ${disabled.id} disabled (3 attempts failed)`))).toBe(true);
    expect(await count('petstore_webhook_lag_positions', { endpoint: String(disabled.id) })).toBe(1);

    healthy = true;
    await createPet(t, { name: 'Second' });
    await sleep(300);
    expect(hook.received).toHaveLength(3);
    expect(await endpoints.update(disabled.id, { enabled: true }, CLI_ACTOR)).toMatchObject({ enabled: true });
    await until(() => hook.received.length === 5);
    expect(hook.received.map((d) => JSON.parse(d.body).pet.name)).toEqual(['First', 'First', 'First', 'First', 'Second']);
  });

  test('when the receiver answers 429 with Retry-After: 1, then the retry waits that second, not the schedule', async () => {
    const hook = await receiver((n) => (n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    await endpoints.create({ url: hook.url }, CLI_ACTOR);
    dispatcher();
    await createPet(t);
    await until(() => hook.received.length === 2);
    expect(hook.received[1].at - hook.received[0].at).toBeGreaterThanOrEqual(950);
    expect(hook.received[1].headers['webhook-id']).toBe(hook.received[0].headers['webhook-id']);
  });

  test('when an endpoint has a status filter, then it receives only the pets with that status', async () => {
    const hook = await receiver();
    await endpoints.create({ url: hook.url, status: 'sold' }, CLI_ACTOR);
    dispatcher();
    await createPet(t, { name: 'Kept', status: 'sold' });
    await createPet(t, { name: 'Skipped', status: 'available' });
    await createPet(t, { name: 'Kept too', status: 'sold' });
    await until(() => hook.received.length === 2);
    await sleep(300);
    expect(hook.received.map((d) => JSON.parse(d.body).pet.name)).toEqual(['Kept', 'Kept too']);
    await until(async () => (await stored())[0].cursor === (await new WebhookEndpointRepository(t.database).head()));
  });

  test('when a secret is rotated with an overlap, then each delivery carries two signatures, and either secret verifies it', async () => {
    const hook = await receiver();
    const { id, secret: old } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
    const rotated = await endpoints.rotateSecret(id, { overlap: 60 }, CLI_ACTOR);
    dispatcher();
    await createPet(t);
    await until(() => hook.received.length === 1);
    const [delivery] = hook.received;
    expect((delivery.headers['webhook-signature'] as string).split(' ')).toHaveLength(2);
    expect(verified(old, delivery)).toEqual(verified(rotated.secret, delivery));
    expect(() => verified(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, delivery)).toThrow();
  });

  test('when the secret is rotated without overlap during a catch-up, then the next event is signed by the new secret alone', async () => {
    let rotated: string | undefined;
    const hook = await receiver(async (n) => {
      if (n === 0) rotated = (await endpoints.rotateSecret(id, { overlap: 0 }, CLI_ACTOR)).secret;
      return { status: 200 };
    });
    const { id, secret: old } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
    for (const name of ['A', 'B', 'C']) await createPet(t, { name });
    dispatcher();
    await until(() => hook.received.length === 3);
    const [first, ...later] = hook.received;
    expect(verified(old, first)).toMatchObject({ pet: { name: 'A' } });
    for (const delivery of later) {
      expect((delivery.headers['webhook-signature'] as string).split(' ')).toHaveLength(1);
      expect(verified(rotated!, delivery)).toBeTruthy();
      expect(() => verified(old, delivery)).toThrow();
    }
  });

  test('when an endpoint is disabled during a catch-up, then its next events are not sent', async () => {
    const hook = await receiver(async (n) => {
      if (n === 0) await t.dataSource.query("UPDATE webhook_endpoint SET state = 'disabled', disabled_reason = 'gone' WHERE id = ?", [id]);
      return { status: 200 };
    });
    const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
    for (const name of ['A', 'B', 'C']) await createPet(t, { name });
    dispatcher();
    await until(() => hook.received.length === 1);
    await sleep(300);
    expect(hook.received).toHaveLength(1);
  });

  test('when no secret of an endpoint is valid, then nothing is sent unsigned, and a warning names it', async () => {
    const hook = await receiver();
    const { id, secret } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
    await new WebhookEndpointRepository(t.database).setSecrets(id, [{ secret, expiresAt: new Date(Date.now() - 1000).toISOString() }]);
    await createPet(t);
    dispatcher();
    await until(() => warnings.some((w) => w.includes(`endpoint ${id} has no valid signing secret`)));
    await sleep(200);
    expect(hook.received).toHaveLength(0);
  });

  test('when a name that resolved to a public address resolves to a private one at delivery, then nothing is sent, and the endpoint ends disabled', async () => {
    const hook = await receiver();
    // Stored while private targets were allowed, as if its DNS had changed since.
    await endpoints.create({ url: `http://localhost:${hook.port}/hook` }, CLI_ACTOR);
    const { count } = dispatcher({ rules: { allowHttp: true, allowPrivateTargets: false }, schedule: [0, 0.05] });
    await createPet(t);
    await until(async () => (await stored())[0].state === 'disabled');
    expect(hook.received).toHaveLength(0);
    expect(await count('petstore_webhook_deliveries_total', { outcome: 'refused_target' })).toBe(2);
  });

  test('when the host does not resolve, then the attempt counts as a network error, not a refused target', async () => {
    // Stored directly: add refuses a name that does not resolve.
    await new WebhookEndpointRepository(t.database).add({
      url: 'http://no-such-host.invalid/hook',
      status: null,
      description: null,
      secret: 'whsec_' + Buffer.alloc(32, 7).toString('base64'),
    });
    const { count } = dispatcher({ schedule: [0, 60] });
    await createPet(t);
    await until(async () => (await count('petstore_webhook_deliveries_total', { outcome: 'network_error' })) === 1);
    expect(await count('petstore_webhook_deliveries_total', { outcome: 'refused_target' })).toBe(0);
  });

  test("when the connection's own lookup resolves to a private address (a rebinding after the check), then undici's connection is refused", async () => {
    const hook = await receiver();
    const connect = (allowPrivateTargets: boolean) =>
      undiciRequest(`http://localhost:${hook.port}/hook`, {
        method: 'POST',
        body: '{}',
        dispatcher: new Agent({ connect: { lookup: checkedLookup({ allowHttp: true, allowPrivateTargets }) } }),
      });
    await expect(connect(false)).rejects.toThrow(WebhookTargetError);
    expect(hook.received).toHaveLength(0);
    expect((await connect(true)).statusCode).toBe(204);
  });

  test('when two dispatchers share the database, then one at a time delivers to an endpoint: every pet once, in order, never two requests at once', async () => {
    const hooks = await Promise.all([receiver(), receiver(), receiver()]);
    for (const hook of hooks) await endpoints.create({ url: hook.url }, CLI_ACTOR);
    dispatcher();
    dispatcher();
    const names = Array.from({ length: 12 }, (_, i) => `Pet ${i}`);
    for (const name of names) await createPet(t, { name });
    await until(() => hooks.every((hook) => hook.received.length === names.length));
    await sleep(300);
    for (const hook of hooks) {
      expect(hook.received.map((d) => JSON.parse(d.body).pet.name)).toEqual(names);
      expect(hook.maxInFlight()).toBe(1);
    }
  });

  test('when the receiver answers 200 with a body that never ends, then the attempt is a delivery: the body is read up to its bound, not to its end', async () => {
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.write(Buffer.alloc(LIMITS.responseBodyBytes * 2, 'x'));
      // …and never ends.
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closing.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    await endpoints.create({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` }, CLI_ACTOR);
    const { count } = dispatcher({ limits: { ...LIMITS, attemptTimeoutMs: 10_000 } });
    await createPet(t);
    await until(async () => (await count('petstore_webhook_deliveries_total', { outcome: 'success' })) === 1, 3_000);
    expect((await stored())[0].failuresInRow).toBe(0);
  });

  test('when every endpoint is caught up, then the dispatcher only reads: nothing written, so the embedded file is not saved', async () => {
    const hook = await receiver();
    await endpoints.create({ url: hook.url }, CLI_ACTOR);
    dispatcher();
    await createPet(t);
    await until(() => hook.received.length === 1);
    await sleep(200);
    const statements = countStatements(t.dataSource);
    await sleep(LIMITS.claimEveryMs * 10);
    expect(statements.count(/webhook_endpoint/)).toBeGreaterThanOrEqual(5);
    // The dispatcher's writes; on MySQL the change feed's sequencer renews its own lease (pet_feed) meanwhile.
    expect(statements.count(/^\s*(UPDATE|INSERT|DELETE)(?![\s\S]*pet_feed)/i)).toBe(0);
  });

  test("when tracing is on (the service's own sampler), then each attempt is a root client span with the HTTP client attributes, while a root statement is dropped", async () => {
    const exporter = new InMemorySpanExporter();
    const sampler = new RequestStatementsSampler(samplerOf({}));
    trace.setGlobalTracerProvider(new BasicTracerProvider({ sampler, spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    try {
      // What the mysql2 instrumentation starts for a statement outside any request: not recorded.
      const statement = trace.getTracer('test').startSpan('SELECT', { kind: SpanKind.CLIENT, attributes: { 'db.system.name': 'mysql' } });
      expect(statement.isRecording()).toBe(false);
      statement.end();
      const hook = await receiver((n) => ({ status: n === 0 ? 503 : 200 }));
      const { id } = await endpoints.create({ url: hook.url }, CLI_ACTOR);
      dispatcher();
      await createPet(t);
      await until(() => exporter.getFinishedSpans().length === 2);
      const spans = exporter.getFinishedSpans();
      expect(spans.map((span) => [span.name, span.kind, span.attributes['http.response.status_code']])).toEqual([
        ['POST', SpanKind.CLIENT, 503],
        ['POST', SpanKind.CLIENT, 200],
      ]);
      expect(spans[0].attributes).toMatchObject({
        'http.request.method': 'POST',
        'url.full': hook.url,
        'server.address': '127.0.0.1',
        'server.port': hook.port,
        'error.type': '503',
        'petstore.webhook.endpoint': id,
        'petstore.webhook.outcome': 'http_error',
      });
      expect(spans[0].status.code).toBe(SpanStatusCode.ERROR);
      expect(spans[1].attributes['error.type']).toBeUndefined();
    } finally {
      trace.disable();
    }
  });

  test('when a dispatcher closes during an attempt, then it cuts it, counts nothing, gives the lease up, and another sends the event at once with the same webhook-id', async () => {
    let hang = true;
    const hook = await receiver(() => (hang ? 'hang' : { status: 200 }));
    await endpoints.create({ url: hook.url }, CLI_ACTOR);
    const first = dispatcher({ limits: { ...LIMITS, attemptTimeoutMs: 10_000, leaseSeconds: 10 } });
    await createPet(t);
    await until(() => hook.received.length === 1);
    const closing = performance.now();
    await first.worker.close();
    expect(performance.now() - closing).toBeLessThan(2_000);
    expect(await first.count('petstore_webhook_deliveries_total', { outcome: 'timeout' })).toBe(0);
    expect(await first.count('petstore_webhook_deliveries_total', { outcome: 'network_error' })).toBe(0);
    const [{ lease_holder: holder }] = await t.dataSource.query('SELECT lease_holder FROM webhook_endpoint');
    expect(holder).toBeNull();
    hang = false;
    dispatcher();
    await until(() => hook.received.length === 2, 2_000);
    expect(hook.received[1].headers['webhook-id']).toBe(hook.received[0].headers['webhook-id']);
  });

  test('when one endpoint hangs, then another is served all the same', async () => {
    const stuck = await receiver(() => 'hang');
    const fine = await receiver();
    await endpoints.create({ url: stuck.url }, CLI_ACTOR);
    await endpoints.create({ url: fine.url }, CLI_ACTOR);
    dispatcher({ schedule: [0, 60], limits: { ...LIMITS, attemptTimeoutMs: 10_000 } });
    await createPet(t);
    await createPet(t);
    // Well within the stuck endpoint's attempt, which is still waiting for its answer.
    await until(() => fine.received.length === 2, 3_000);
    expect(stuck.received).toHaveLength(1);
  });
});

describe('webhook deliveries before the migrations (DATABASE_MIGRATE_ON_START=false, a migration Job still to run)', () => {
  test('when the tables do not exist yet, then the dispatcher waits quietly (one info line, no warning) and delivers once they do', async () => {
    const { database: config, drop } = await createTestDatabase();
    const database = await openDatabase(config, { migrate: false });
    const infos: string[] = [];
    const warnings: string[] = [];
    const log = {
      // The dispatcher logs a message alone, or fields then a message.
      info: (fields: object | string, message?: string) => void infos.push(message ?? (typeof fields === 'string' ? fields : '')),
      warn: (_fields: object, message?: string) => void warnings.push(message ?? ''),
    };
    const worker = new WebhookDispatcher({ database, rules: OPEN, retrySchedule: SCHEDULE, log, limits: LIMITS });
    try {
      worker.start();
      await sleep(LIMITS.claimEveryMs * 6);
      expect(warnings).toEqual([]);
      expect(infos.filter((line) => line.includes('waiting for the migrations'))).toHaveLength(1);

      await database.writer.runMigrations({ transaction: 'each' });
      const { id } = await new WebhookEndpointService(database, OPEN, new AuditTrail(database, pino({ level: 'silent' }))).create(
        { url: 'http://127.0.0.1:9/hook' },
        CLI_ACTOR,
      );
      // A feed position no event matches: the dispatcher, claiming now, moves the endpoint's cursor over it.
      await database.writer.query("UPDATE pet_feed SET head = head + 1 WHERE name = 'pets'");
      const repository = new WebhookEndpointRepository(database);
      await until(async () => (await repository.get(id))!.cursor === (await repository.head()));
      expect(warnings).toEqual([]);
      expect(infos).toContain('webhooks: claiming endpoints again');
    } finally {
      await worker.close();
      await database.close();
      await drop();
    }
  });
});
