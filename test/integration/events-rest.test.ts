import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeEventCursor, encodePetCursor } from '../../src/pets/pet-cursor';
import { createLogger } from '../../src/observability/logger';
import { type Metrics, createMetrics } from '../../src/observability/metrics.registry';
import { FOLLOWER_LIMITS, PET_FEED_LIMITS } from '../../src/limits';
import { openEventStream } from '../helpers/event-stream-client';
import { metricValue } from '../helpers/subscription-client';
import { type TestApp, createPet, request, startTestApp } from '../helpers/test-app';

/**
 * The REST change feed, `GET /v1/events` (docs/events.md): JSON pages and the SSE stream, against the real app on a real
 * database.
 */

/** Resolves once `check` holds, polling every 10 ms; rejects after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const giveUpAt = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error('timed out');
    await sleep(10);
  }
}

/** The `<…>` of a `Link: <…>; rel="next"` header, as a path. */
function nextLink(link: string | null): string {
  const match = /^<([^>]+)>; rel="next"$/.exec(link ?? '');
  if (!match) throw new Error(`no next link in ${link}`);
  return match[1];
}

/** Walks the feed from `path` following `Link` until an empty page; returns every event and the last link. */
async function walk(t: TestApp, path = '/v1/events?limit=2'): Promise<{ events: any[]; last: string; pages: number }> {
  const events: any[] = [];
  for (let pages = 1; ; pages++) {
    const page = await request(t, 'GET', path);
    expect(page.status).toBe(200);
    const next = nextLink(page.headers.get('link'));
    if (page.body.length === 0) return { events, last: next, pages };
    events.push(...page.body);
    path = next;
  }
}

/** Inserts `count` committed pets straight into the table, 500 a statement; the sequencer stamps them. */
async function insertPets(t: TestApp, count: number, name: string): Promise<void> {
  for (let done = 0; done < count; done += 500) {
    const rows = Math.min(500, count - done);
    await t.dataSource.query(
      `INSERT INTO pet (name, category_id, status) VALUES ${Array(rows).fill('(?, 1, ?)').join(', ')}`,
      Array(rows).fill([name, 'available']).flat(),
    );
  }
}

describe('GET /v1/events', () => {
  let t: TestApp;
  let metrics: Metrics;
  const warnings: any[] = [];
  /** Followers of an idle app: the petCreated relay. */
  let idleFollowers: number;

  beforeAll(async () => {
    metrics = createMetrics();
    t = await startTestApp({ observe: { metrics, logger: createLogger('warn', { write: (line) => void warnings.push(JSON.parse(line)) }) } });
    idleFollowers = await metricValue(metrics, 'petstore_feed_followers');
  });
  afterAll(() => t.close());

  /** Creates pets through the API and waits until the feed holds them. */
  async function createInFeed(overrides: Record<string, unknown>[]): Promise<any[]> {
    const pets = [];
    for (const override of overrides) pets.push(await createPet(t, override));
    const ids = new Set(pets.map((pet) => pet.id));
    await until(async () => (await walk(t, '/v1/events?limit=100')).events.filter((event) => ids.has(event.pet.id)).length === ids.size);
    return pets;
  }

  describe('as JSON pages', () => {
    test('when walked from the beginning, then every created pet is there once, in feed order, and every page links the next', async () => {
      const created = await createInFeed([{ name: 'a' }, { name: 'b', status: 'sold' }, { name: 'c' }, { name: 'd', status: 'pending' }, { name: 'e' }]);
      const { events, last, pages } = await walk(t);
      const ids = events.map((event) => event.pet.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids.slice(-5)).toEqual(created.map((pet) => pet.id));
      expect(events.slice(-5).map((event) => event.pet)).toEqual(created);
      for (const event of events) expect(event).toEqual({ id: expect.any(String), type: 'pet.created', pet: expect.any(Object) });
      expect(pages).toBeGreaterThan(2);
      // The empty last page links itself: a poller just follows it.
      const again = await request(t, 'GET', last);
      expect(again.body).toEqual([]);
      expect(nextLink(again.headers.get('link'))).toBe(last);
      // A new pet appears on the page the poller already holds.
      const later = await createPet(t, { name: 'later' });
      await until(async () => (await request(t, 'GET', last)).body.length === 1);
      expect((await request(t, 'GET', last)).body[0].pet).toEqual(later);
    });

    test('when a poller sends back the ETag of the page it holds, then 304, not charged, until an event lands on that page', async () => {
      const { last } = await walk(t, '/v1/events?limit=100');
      const first = await request(t, 'GET', last);
      const tag = first.headers.get('etag')!;
      expect(tag).toMatch(/^"[^"]+"$/);
      const unchanged = await request(t, 'GET', last, { headers: { 'if-none-match': tag } });
      expect([unchanged.status, unchanged.headers.get('etag'), unchanged.headers.get('link')]).toEqual([304, tag, first.headers.get('link')]);
      const again = await request(t, 'GET', last, { headers: { 'if-none-match': tag } });
      expect(again.headers.get('ratelimit')).toBe(unchanged.headers.get('ratelimit'));
      const pet = await createPet(t, { name: 'polled' });
      await until(async () => (await request(t, 'GET', last, { headers: { 'if-none-match': tag } })).status === 200);
      const changed = await request(t, 'GET', last, { headers: { 'if-none-match': tag } });
      expect(changed.body.map((event: any) => event.pet)).toEqual([pet]);
      expect(changed.headers.get('etag')).not.toBe(tag);
    });

    test('when a status is given, then only its pets come, and the next link keeps it', async () => {
      const [sold] = await createInFeed([{ name: 'sold one', status: 'sold' }, { name: 'free one' }]);
      const page = await request(t, 'GET', '/v1/events?status=sold&limit=100');
      expect(page.status).toBe(200);
      expect(page.body.every((event: any) => event.pet.status === 'sold')).toBe(true);
      expect(page.body.at(-1).pet).toEqual(sold);
      expect(nextLink(page.headers.get('link'))).toBe(`/v1/events?limit=100&status=sold&after=${page.body.at(-1).id}`);
    });

    test.each([
      ['limit=0', /limit must not be less than 1/],
      ['limit=101', /limit must not be greater than 100/],
      ['limit=ten', /limit must be an integer/],
      ['status=lost', /status must be one of/],
      ['order=desc', /property order should not exist/],
      [`after=${encodePetCursor({ afterId: 3 })}`, /after is a list cursor \(GET \/v1\/pets, pets\), not an event cursor/],
      [`after=${encodeEventCursor(3).slice(0, -1)}A`, /after must be an event cursor/],
      ['after=', /after must be an event cursor/],
    ])('when asked with %s, then 400 in the Error shape says why', async (query, message) => {
      const answer = await request(t, 'GET', `/v1/events?${query}`);
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ code: 'BAD_USER_INPUT', status: 400, message: expect.stringMatching(message) });
    });

    test('when an event cursor is sent to GET /v1/pets, then 400 names it', async () => {
      const answer = await request(t, 'GET', `/v1/pets?after=${encodeEventCursor(1)}`);
      expect(answer.status).toBe(400);
      expect(answer.body.message).toMatch(/after is an event cursor/);
    });

    test('when a publishable (read-only) key asks, then 200; without a key, 401', async () => {
      const { key } = await t.apiKeys.create({ name: 'browser', kind: 'publishable' });
      expect((await request(t, 'GET', '/v1/events', { apiKey: key })).status).toBe(200);
      expect((await request(t, 'GET', '/v1/events', { apiKey: null })).status).toBe(401);
    });

    test('when another method is used, then 405 with Allow', async () => {
      const answer = await request(t, 'POST', '/v1/events', { body: {} });
      expect(answer.status).toBe(405);
      expect(answer.headers.get('allow')).toBe('GET, HEAD');
    });
  });

  describe('as server-sent events', () => {
    afterEach(async () => {
      await until(async () => (await metricValue(metrics, 'petstore_event_streams')) === 0);
    });

    test('when opened with after, then it replays what follows, goes live, and frames each event with id, event and data after a retry', async () => {
      const [first, second, third] = await createInFeed([{ name: 's1' }, { name: 's2' }, { name: 's3' }]);
      const { events: feed } = await walk(t, '/v1/events?limit=100');
      const firstEvent = feed.find((event) => event.pet.id === first.id);
      const stream = await openEventStream(t, `?after=${firstEvent.id}`);
      expect(stream.response.statusCode).toBe(200);
      expect(stream.response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      expect(stream.response.headers['cache-control']).toBe('no-store');
      expect(stream.response.headers.ratelimit).toBeDefined();
      await until(() => stream.events().length >= 2);
      expect(stream.frames[0]).toEqual({ retry: String(PET_FEED_LIMITS.retryMs) });
      expect(stream.events().map((event) => event.pet)).toEqual([second, third]);
      const live = await createPet(t, { name: 'live' });
      await until(() => stream.events().length === 3);
      const frame = stream.frames.at(-1)!;
      expect(frame).toEqual({ id: expect.any(String), event: 'pet.created', data: expect.any(String) });
      expect(JSON.parse(frame.data)).toEqual({ id: frame.id, type: 'pet.created', pet: live });
      expect(await metricValue(metrics, 'petstore_feed_followers')).toBe(idleFollowers + 1);
      stream.close();
      await until(async () => (await metricValue(metrics, 'petstore_feed_followers')) === idleFollowers);
    });

    test('when Last-Event-ID is sent with after, then it resumes after Last-Event-ID', async () => {
      const [first, second, third] = await createInFeed([{ name: 'r1' }, { name: 'r2' }, { name: 'r3' }]);
      const { events: feed } = await walk(t, '/v1/events?limit=100');
      const idOf = (pet: any) => feed.find((event) => event.pet.id === pet.id).id;
      const stream = await openEventStream(t, `?after=${idOf(first)}`, { 'last-event-id': idOf(second) });
      await until(() => stream.events().length >= 1);
      expect(stream.events()[0].pet).toEqual(third);
      stream.close();
    });

    test('when neither is sent, then it starts from now', async () => {
      await createInFeed([{ name: 'before' }]);
      const stream = await openEventStream(t);
      await until(() => stream.frames.length >= 1);
      const after = await createPet(t, { name: 'after' });
      await until(() => stream.events().length >= 1);
      expect(stream.events().map((event) => event.pet)).toEqual([after]);
      stream.close();
    });

    test.each([
      [encodePetCursor({ afterId: 1 }), /Last-Event-ID is a list cursor/],
      ['not-a-cursor', /Last-Event-ID must be an event cursor/],
    ])('when Last-Event-ID is %s, then 400 in the Error shape before any stream', async (lastEventId, message) => {
      const answer = await request(t, 'GET', '/v1/events', { headers: { accept: 'text/event-stream', 'last-event-id': lastEventId } });
      expect(answer.status).toBe(400);
      expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
      expect(answer.body).toEqual({ code: 'BAD_USER_INPUT', status: 400, message: expect.stringMatching(message) });
    });

    test('when a key holds as many streams as it may, then the next is 429 until one closes', async () => {
      const { key } = await t.apiKeys.create('streams');
      const streams = await Promise.all(
        Array.from({ length: FOLLOWER_LIMITS.maxStreamsPerKey }, () => openEventStream(t, '', { authorization: `Bearer ${key}` })),
      );
      const refused = await request(t, 'GET', '/v1/events', { apiKey: key, headers: { accept: 'text/event-stream' } });
      expect(refused.status).toBe(429);
      expect(refused.body.message).toMatch(/too many open streams/i);
      streams[0].close();
      await until(async () => (await metricValue(metrics, 'petstore_event_streams')) < FOLLOWER_LIMITS.maxStreamsPerKey);
      const another = await openEventStream(t, '', { authorization: `Bearer ${key}` });
      expect(another.response.statusCode).toBe(200);
      for (const stream of [...streams, another]) stream.close();
    });

    test('when the client stops reading, then the stream is closed with at most 1 MiB waiting, and its follower ends', async () => {
      // Enough to fill the kernel's buffers on both ends and 1 MiB more.
      const count = 12_000;
      const name = '🐕'.repeat(100);
      const before = (await walk(t, '/v1/events?limit=100')).events.length;
      await insertPets(t, count, name);
      const lastOne = `/v1/events?limit=1&after=${encodeEventCursor(before + count - 1)}`;
      await until(async () => (await request(t, 'GET', lastOne)).body.length === 1, 60_000);
      const socket = connect(Number(new URL(t.url).port), '127.0.0.1');
      socket.pause();
      socket.write(
        `GET /v1/events?after=${encodeEventCursor(1)} HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${t.apiKey}\r\n\r\n`,
      );
      const closing = () => warnings.find((line) => line.msg === 'closing a stream whose client stopped reading');
      await until(() => closing() !== undefined, 30_000);
      await until(async () => (await metricValue(metrics, 'petstore_event_streams')) === 0);
      await until(async () => (await metricValue(metrics, 'petstore_feed_followers')) === idleFollowers);
      expect(closing().bufferedBytes).toBeLessThanOrEqual(FOLLOWER_LIMITS.maxBufferedBytes);
      socket.destroy();
    }, 90_000);
  });
});
