import type { Client } from 'graphql-ws';
import { setTimeout as sleep } from 'node:timers/promises';
import { SUBSCRIPTION_CLOSE } from '../../src/graphql/subscription-close.codes';
import { FOLLOWER_LIMITS } from '../../src/limits';
import { type Metrics, createMetrics } from '../../src/observability/metrics.registry';
import { type EventStream, type Frame, openEventStream } from '../helpers/event-stream-client';
import { exchangeRaw, parseRawResponse } from '../helpers/raw-http';
import { type Closed, connectWithKey, metricValue, subscribe } from '../helpers/subscription-client';
import { type TestApp, createPet, request, startTestApp } from '../helpers/test-app';

/**
 * Every stream that follows the change feed under one set of rules (docs/events.md "Following"): one budget per key for
 * SSE streams and WebSockets together, the key's validity at every instant on SSE as on WebSocket, one metric family.
 * Across instances through Redis: test/system/key-revocation.test.ts; readers that stop reading:
 * test/system/subscription-slow-peers.test.ts and test/integration/events-rest.test.ts.
 */

/** How late an end may come after the instant it is due, on a loaded machine. */
const SLACK_MS = 1000;

/** Resolves once `check` holds, polling every 20 ms; rejects after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const giveUpAt = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error('timed out');
    await sleep(20);
  }
}

/** The value of `name{transport="…"}` in `metrics`. */
async function byTransport(metrics: Metrics, name: string, transport: string): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  return metric?.values.find((value) => value.labels.transport === transport)?.value ?? 0;
}

/** The `error` frame that ends a stream, parsed; undefined before it came. */
const endFrame = (stream: EventStream): Frame | undefined => stream.frames.find((frame) => frame.event === 'error');
/** The pet events a stream carried (not its `error` frame). */
const petEvents = (stream: EventStream) => stream.frames.filter((frame) => frame.event === 'pet.created').map((frame) => JSON.parse(frame.data));

describe('the streams of the change feed, SSE and WebSocket, under one set of rules', () => {
  let t: TestApp;
  const metrics = createMetrics();
  const clients: Client[] = [];
  const streams: EventStream[] = [];
  beforeAll(async () => {
    t = await startTestApp({ env: { API_KEY_CACHE_SECONDS: '60' }, observe: { metrics } });
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
    for (const stream of streams.splice(0)) stream.close();
  });
  afterAll(() => t.close());

  const openSse = async (key: string, query = '') => {
    const stream = await openEventStream({ url: t.url, apiKey: key }, query);
    streams.push(stream);
    return stream;
  };
  const openSocket = async (key: string) => {
    const { client, closed } = await connectWithKey(t, key);
    clients.push(client);
    return { client, closed };
  };

  describe('one budget per key per instance', () => {
    test(`when a key holds ${FOLLOWER_LIMITS.maxStreamsPerKey / 2} SSE streams and ${FOLLOWER_LIMITS.maxStreamsPerKey / 2} WebSockets, then another of either is refused; another key is not, and a closed stream gives its place back`, async () => {
      const { key } = await t.apiKeys.create('one budget');
      const half = FOLLOWER_LIMITS.maxStreamsPerKey / 2;
      const sse = await Promise.all(Array.from({ length: half }, () => openSse(key)));
      for (const stream of sse) expect(stream.response.statusCode).toBe(200);
      for (let i = 0; i < half; i++) await openSocket(key);

      const refusedSse = await request(t, 'GET', '/v1/events', { apiKey: key, headers: { accept: 'text/event-stream' } });
      expect(refusedSse.status).toBe(429);
      expect(refusedSse.headers.get('retry-after')).toBe('1');
      expect(refusedSse.body).toEqual({ code: 'TOO_MANY_REQUESTS', status: 429, message: expect.stringMatching(/SSE streams and WebSockets together/) });

      // A browser's key comes in connection_init: refused with 4429, the same message as its reason.
      const { closed } = await openSocketUnready(key);
      expect(await closed).toEqual({
        code: SUBSCRIPTION_CLOSE.tooManyConnections.code,
        reason: expect.stringMatching(/^Too many open streams for this API key/),
      });

      // A client that sends its key with the upgrade is refused there, as HTTP: 429 in the Error shape, no WebSocket made.
      const upgrade = await exchangeRaw(
        t.url,
        `GET /graphql HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
          `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      );
      const refusedUpgrade = parseRawResponse(upgrade.received);
      expect(refusedUpgrade.status).toBe(429);
      expect(JSON.parse(refusedUpgrade.body)).toEqual({
        code: 'TOO_MANY_REQUESTS',
        status: 429,
        message: expect.stringMatching(/SSE streams and WebSockets together/),
      });

      const other = await t.apiKeys.create('another key');
      expect((await openSse(other.key)).response.statusCode).toBe(200);

      sse[0].close();
      await until(async () => (await byTransport(metrics, 'petstore_feed_active_streams', 'sse')) === half);
      expect((await openSse(key)).response.statusCode).toBe(200);
    });

    test('when a WebSocket sends its key with the upgrade, then it is admitted there and its subscriptions run without a key in connection_init', async () => {
      const { key } = await t.apiKeys.create('key on the upgrade');
      const bad = await exchangeRaw(
        t.url,
        `GET /graphql HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
          `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\nAuthorization: Bearer pst_sk_nope\r\n\r\n`,
      );
      const refused = parseRawResponse(bad.received);
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body)).toMatchObject({ code: 'UNAUTHENTICATED', status: 401 });

      const { client } = await connectWithHeader(key);
      const { pets } = subscribe(client, 'subscription { petCreated { name } }');
      await sleep(100);
      await createPet(t, { name: 'seen through an upgrade-admitted socket' });
      expect(await pets(1)).toEqual([{ name: 'seen through an upgrade-admitted socket' }]);
    });
  });

  describe("the key's validity on every stream", () => {
    test('when the key of an SSE stream is revoked, then the stream ends within a second with an error event in the Error shape, and carries nothing after', async () => {
      const { apiKey, key } = await t.apiKeys.create('revoked with a stream open');
      const stream = await openSse(key);
      await until(() => stream.frames.length >= 1);
      const revokedAt = Date.now();
      await t.apiKeys.revoke(apiKey.id);
      await stream.ended;
      const endedAt = Date.now();
      expect(endedAt - revokedAt).toBeLessThan(SLACK_MS);
      expect(JSON.parse(endFrame(stream)!.data)).toEqual({
        code: 'UNAUTHENTICATED',
        status: 401,
        message: expect.stringMatching(/^invalid_token: the API key was revoked/),
      });
      expect(stream.frames.at(-1)!.event).toBe('error');
      await createPet(t, { name: 'after the revocation' });
      await sleep(300);
      expect(petEvents(stream)).toEqual([]);
    });

    test('when the key of an SSE stream expires, then the stream ends at the expiry instant, not before, with the expiry in its error event', async () => {
      const { apiKey, key } = await t.apiKeys.create({ name: 'short-lived stream', expiresInMs: 1500 });
      const stream = await openSse(key);
      await stream.ended;
      const late = Date.now() - apiKey.expiresAt!.getTime();
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThan(SLACK_MS);
      expect(JSON.parse(endFrame(stream)!.data)).toEqual({
        code: 'UNAUTHENTICATED',
        status: 401,
        message: `invalid_token: the API key expired at ${apiKey.expiresAt!.toISOString()}; roll it or create a new one, then reconnect.`,
      });
    });

    test("when the key of an SSE stream is rolled, then the old key's stream ends when the overlap does, and the new key's SSE stream and WebSocket go on", async () => {
      const old = await t.apiKeys.create('rolled with streams open');
      const oldStream = await openSse(old.key);
      const rolled = (await t.apiKeys.roll(old.apiKey.id, 1500))!;
      const newStream = await openSse(rolled.key);
      const { client, closed } = await openSocket(rolled.key);
      let socketClosed: Closed | undefined;
      void closed.then((result) => (socketClosed = result));
      const { pets } = subscribe(client, 'subscription { petCreated { name } }');
      await oldStream.ended;
      const late = Date.now() - rolled.previous.expiresAt!.getTime();
      expect(late).toBeGreaterThanOrEqual(0);
      expect(late).toBeLessThan(SLACK_MS);
      expect(endFrame(oldStream)).toBeDefined();

      await createPet(t, { name: 'after the overlap' });
      await until(() => petEvents(newStream).length === 1);
      expect(petEvents(newStream)[0].pet.name).toBe('after the overlap');
      expect(await pets(1)).toEqual([{ name: 'after the overlap' }]);
      expect(endFrame(newStream)).toBeUndefined();
      expect(socketClosed).toBeUndefined();
    });

    test('when the key of a WebSocket is revoked, then it closes with 4403 as before, and its SSE twin ends too', async () => {
      const { apiKey, key } = await t.apiKeys.create('both transports');
      const stream = await openSse(key);
      const { client, closed } = await openSocket(key);
      subscribe(client, 'subscription { petEvents { cursor } }');
      await t.apiKeys.revoke(apiKey.id);
      expect(await closed).toEqual(SUBSCRIPTION_CLOSE.revoked);
      await stream.ended;
      expect(endFrame(stream)).toBeDefined();
    });
  });

  describe('one metric family', () => {
    test('when events reach an SSE stream and a WebSocket, then petstore_feed_delivered_events_total and petstore_feed_active_streams count each by transport', async () => {
      const sseBefore = await byTransport(metrics, 'petstore_feed_delivered_events_total', 'sse');
      const wsBefore = await byTransport(metrics, 'petstore_feed_delivered_events_total', 'websocket');
      const stream = await openSse(t.apiKey);
      const { client } = await openSocket(t.apiKey);
      const { pets } = subscribe(client, 'subscription { petCreated { id } }');
      expect(await byTransport(metrics, 'petstore_feed_active_streams', 'sse')).toBeGreaterThanOrEqual(1);
      expect(await byTransport(metrics, 'petstore_feed_active_streams', 'websocket')).toBeGreaterThanOrEqual(1);
      await sleep(100);
      await createPet(t, { name: 'counted' });
      await pets(1);
      await until(() => petEvents(stream).length === 1);
      expect(await byTransport(metrics, 'petstore_feed_delivered_events_total', 'sse')).toBe(sseBefore + 1);
      expect(await byTransport(metrics, 'petstore_feed_delivered_events_total', 'websocket')).toBe(wsBefore + 1);
      expect(await metricValue(metrics, 'petstore_event_streams')).toBe(await byTransport(metrics, 'petstore_feed_active_streams', 'sse'));
    });
  });

  /** A WebSocket that sends its key in connection_init and is not yet acknowledged: its close tells the refusal. */
  async function openSocketUnready(key: string) {
    const { connect } = await import('../helpers/subscription-client');
    const opened = connect(t, { Authorization: `Bearer ${key}` });
    clients.push(opened.client);
    return opened;
  }

  /** A graphql-ws client whose key travels in the upgrade's Authorization header (a server client; browsers cannot). */
  async function connectWithHeader(key: string) {
    const { createClient } = await import('graphql-ws');
    const WebSocket = (await import('ws')).default;
    const headered = class extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { headers: { authorization: `Bearer ${key}` } });
      }
    };
    const client = createClient({ url: `${t.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: headered, retryAttempts: 0, lazy: false });
    clients.push(client);
    await new Promise<void>((resolve, reject) => {
      client.on('connected', () => resolve());
      client.on('closed', (event) => reject(new Error(`closed ${(event as { code?: number }).code}`)));
    });
    return { client };
  }
});
