import { mkdtemp, writeFile } from 'node:fs/promises';
import { connect as connectTcp, type NetConnectOpts, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from 'graphql-ws';
import WebSocket from 'ws';
import { SUBSCRIPTION_CLOSE } from '../../src/graphql/subscription-close.codes';
import { sha256Hex } from '../../src/graphql/trusted-documents';
import { SUBSCRIPTION_LIMITS } from '../../src/limits';
import { createLogger } from '../../src/observability/logger';
import { type Metrics, createMetrics } from '../../src/observability/metrics.registry';
import { decodeEventCursor, encodeEventCursor, encodePetCursor } from '../../src/pets/pet-cursor';
import { connectWithKey, metricValue, subscribe, untilActive, wsUrl } from '../helpers/subscription-client';
import { createPet, request, startTestApp, type TestApp } from '../helpers/test-app';
import { createProcessDatabase, testOnMysql } from '../helpers/test-database';

/**
 * `Subscription.petEvents` over WebSocket (docs/subscriptions.md), and `petCreated` fed by the same change
 * feed: a real graphql-ws client against the real app on a real database. Every subscription follows the feed, so the
 * `petstore_feed_followers` gauge tells whether one has left it.
 */

interface Event {
  cursor: string;
  type: string;
  pet: { id: string; name: string; categoryId: number; status: string };
}

const EVENT_FIELDS = 'cursor type pet { id name categoryId status }';

/** Resolves once `check` holds, polling every 10 ms; rejects after `ms`. */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const giveUpAt = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const followers = (metrics: Metrics) => metricValue(metrics, 'petstore_feed_followers');
const untilFollowers = (metrics: Metrics, n: number) => until(async () => (await followers(metrics)) === n, `${n} feed followers`);

describe('petEvents over WebSocket', () => {
  let t: TestApp;
  let metrics: Metrics;
  const clients: Client[] = [];
  beforeAll(async () => {
    metrics = createMetrics();
    t = await startTestApp({ observe: { metrics, logger: createLogger('silent') } });
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
    await untilFollowers(metrics, 0);
  });
  afterAll(() => t.close());

  async function client(target: TestApp = t, key = target.apiKey): Promise<Client> {
    const { client } = await connectWithKey(target, key);
    clients.push(client);
    return client;
  }

  /** Creates `names` one after another over REST; resolves with the pets as the events carry them. */
  async function createAll(names: string[], status = 'available', target = t) {
    const pets = [];
    for (const name of names) pets.push(await createPet(target, { name, status }));
    return pets.map((pet) => ({ ...pet, id: String(pet.id) }));
  }

  /** A petEvents subscription from now, once running: pets created later reach it. */
  async function observer(c: Client, target: Metrics = metrics) {
    const before = await metricValue(target, 'petstore_subscriptions_active');
    const sub = subscribe(c, `subscription { petEvents { ${EVENT_FIELDS} } }`);
    await untilActive(target, before + 1);
    return sub;
  }

  test('when subscribed without after, then only pets created after subscribing arrive, each with its cursor, type and pet', async () => {
    const c = await client();
    const watcher = await observer(c);
    const [before] = await createAll(['Before']);
    // The feed has handed `Before` out: a subscription from now does not see it.
    expect(((await watcher.pets(1)) as Event[])[0].pet).toEqual(before);
    const fresh = await observer(c);
    const after = await createAll(['After1', 'After2']);
    const events = (await fresh.pets(2)) as Event[];
    expect(events.map((event) => event.pet)).toEqual(after);
    expect(events.map((event) => event.type)).toEqual(['pet.created', 'pet.created']);
    const seen = (await watcher.pets(3)) as Event[];
    expect(events.map((event) => event.cursor)).toEqual(seen.slice(1).map((event) => event.cursor));
    expect(decodeEventCursor(events[1].cursor)).toBe(decodeEventCursor(events[0].cursor)! + 1);
    expect(fresh.results).toHaveLength(2);
  });

  test('when subscribed after the cursor of the 3rd event, then the 4th and later are replayed, then new ones arrive live, each once, in feed order', async () => {
    const c = await client();
    const watcher = await observer(c);
    const first = await createAll(['E1', 'E2', 'E3', 'E4', 'E5', 'E6']);
    const seen = (await watcher.pets(6)) as Event[];
    expect(seen.map((event) => event.pet)).toEqual(first);
    const resumed = subscribe(c, `subscription($after: String) { petEvents(after: $after) { ${EVENT_FIELDS} } }`, { after: seen[2].cursor });
    expect(((await resumed.pets(3)) as Event[]).map((event) => event.pet.name)).toEqual(['E4', 'E5', 'E6']);
    const live = await createAll(['L1', 'L2']);
    const events = (await resumed.pets(5)) as Event[];
    expect(events.slice(3).map((event) => event.pet)).toEqual(live);
    expect(events.slice(0, 3).map((event) => event.cursor)).toEqual(seen.slice(3).map((event) => event.cursor));
    const positions = events.map((event) => decodeEventCursor(event.cursor)!);
    expect(positions).toEqual(positions.map((_, i) => positions[0] + i));
    // Nothing twice: the next event is the next pet.
    await createAll(['L3']);
    expect(((await resumed.pets(6)) as Event[])[5].pet.name).toBe('L3');
    expect(resumed.results).toHaveLength(6);
  });

  test('when several events are queued for one WebSocket in one turn, then they leave in one write of its socket, in feed order', async () => {
    // The server's end of the next WebSocket, as the HTTP server hands it to the upgrade.
    const upgraded: Socket[] = [];
    const onUpgrade = (_request: unknown, socket: Socket) => void upgraded.push(socket);
    t.app.server.prependListener('upgrade', onUpgrade);
    const c = await client().finally(() => t.app.server.off('upgrade', onUpgrade));
    expect(upgraded).toHaveLength(1);
    const watcher = await observer(c);
    const created = await createAll(['Q1', 'Q2', 'Q3', 'Q4', 'Q5']);
    const seen = (await watcher.pets(5)) as Event[];
    // Every write of the socket from now: one call of its _write (one chunk) or _writev (several), Node's stream hooks.
    const socket = upgraded[0];
    const writes: string[] = [];
    const write = socket._write.bind(socket);
    const writev = socket._writev!.bind(socket);
    socket._write = (chunk, encoding, callback) => (writes.push('write'), write(chunk, encoding, callback));
    socket._writev = (chunks, callback) => (writes.push(`writev of ${chunks.length}`), writev(chunks, callback));
    // Replayed from the feed's recent events: four `next` messages queued in one turn.
    const replayed = subscribe(c, `subscription($after: String) { petEvents(after: $after) { ${EVENT_FIELDS} } }`, { after: seen[0].cursor });
    const events = (await replayed.pets(4)) as Event[];
    expect(events.map((event) => event.pet)).toEqual(created.slice(1));
    expect(events.map((event) => event.cursor)).toEqual(seen.slice(1).map((event) => event.cursor));
    // ws writes a frame's header and payload apart: four frames, eight chunks, one writev.
    expect(writes).toEqual(['writev of 8']);
  });

  test('when status is given, then only pets with that status are replayed and then sent, their cursors resuming any filter', async () => {
    const c = await client();
    const watcher = await observer(c);
    const [start] = await createAll(['Start']);
    await createAll(['S1'], 'sold');
    await createAll(['A1'], 'available');
    await createAll(['S2'], 'sold');
    const seen = (await watcher.pets(4)) as Event[];
    expect(seen[0].pet).toEqual(start);
    const sold = subscribe(c, `subscription($after: String) { petEvents(after: $after, status: sold) { ${EVENT_FIELDS} } }`, { after: seen[0].cursor });
    expect(((await sold.pets(2)) as Event[]).map((event) => event.pet.name)).toEqual(['S1', 'S2']);
    await createAll(['P1'], 'pending');
    await createAll(['S3'], 'sold');
    const events = (await sold.pets(3)) as Event[];
    expect(events.map((event) => [event.pet.name, event.pet.status])).toEqual([
      ['S1', 'sold'],
      ['S2', 'sold'],
      ['S3', 'sold'],
    ]);
    expect(sold.results).toHaveLength(3);
    // A cursor from the filtered feed resumes the whole feed: A1 lies after S1.
    const all = subscribe(c, `subscription($after: String) { petEvents(after: $after) { pet { name } } }`, { after: events[0].cursor });
    expect(((await all.pets(3)) as Array<{ pet: { name: string } }>).map((event) => event.pet.name)).toEqual(['A1', 'S2', 'P1']);
  });

  test.each<[string, () => unknown, string]>([
    [
      'an edited event cursor',
      () => `${encodeEventCursor(2).slice(0, -2)}AA`,
      "after must be an event cursor from this feed (an event's id or cursor, or an after= of a Link), unchanged",
    ],
    ['a foreign text', () => 'not-a-cursor', "after must be an event cursor from this feed (an event's id or cursor, or an after= of a Link), unchanged"],
    ['a list cursor', () => encodePetCursor({ afterId: 2 }), 'after is a list cursor (GET /v1/pets, pets), not an event cursor'],
  ])('when after is %s, then the subscription ends with one BAD_USER_INPUT error before any event, and leaves no follower', async (_case, after, message) => {
    const c = await client();
    const literal = subscribe(c, `subscription { petEvents(after: ${JSON.stringify(after())}) { cursor } }`);
    const variable = subscribe(c, `subscription($after: String) { petEvents(after: $after) { cursor } }`, { after: after() });
    for (const refused of [literal, variable]) {
      await refused.error();
      expect(refused.state).toEqual({ complete: true });
      expect(refused.results).toEqual([{ errors: [{ message: `Invalid input: ${message}.`, path: ['petEvents'], extensions: { code: 'BAD_USER_INPUT' } }] }]);
    }
    expect(await followers(metrics)).toBe(0);
    expect(await metricValue(metrics, 'petstore_subscriptions_active')).toBe(0);
  });

  test('when a read-only key subscribes, then petEvents runs', async () => {
    const readOnly = (await t.apiKeys.create({ name: 'read-only', scopes: ['pets:read'] })).key;
    const c = await client(t, readOnly);
    const sub = await observer(c);
    const [pet] = await createAll(['ForReaders']);
    expect(((await sub.pets(1)) as Event[])[0].pet).toEqual(pet);
  });

  test('when petCreated runs beside petEvents, then it keeps its shape and its status filter, fed by the same feed', async () => {
    const c = await client();
    const created = subscribe(c, 'subscription { petCreated(status: pending) { id name categoryId status } }');
    const events = subscribe(c, `subscription { petEvents(status: pending) { ${EVENT_FIELDS} } }`);
    await untilActive(metrics, 2);
    expect(await followers(metrics)).toBe(2);
    await createAll(['NotPending']);
    const [pending] = await createAll(['Pending'], 'pending');
    expect(await created.pets(1)).toEqual([pending]);
    expect(((await events.pets(1)) as Event[])[0].pet).toEqual(pending);
  });

  describe('priced and limited as petCreated', () => {
    test('when the rate limit is spent, then a petEvents subscribe is refused as a petCreated one is: each costs one unit', async () => {
      // 4 requests: the connection (1), petEvents and petCreated (1 each), and one more.
      const limited = await startTestApp({ env: { RATE_LIMIT_MAX: '4' } });
      try {
        const { client: c } = await connectWithKey(limited);
        clients.push(c);
        subscribe(c, `subscription { petEvents { cursor } }`);
        subscribe(c, `subscription { petCreated { id } }`);
        subscribe(c, `subscription { petEvents(status: sold) { cursor } }`);
        for (const query of ['subscription { petEvents { cursor } }', 'subscription { petCreated { id } }']) {
          expect(await subscribe(c, query).error()).toEqual([
            {
              message: expect.stringMatching(/^Rate limit reached: retry in \d+ s\.$/),
              extensions: { code: 'TOO_MANY_REQUESTS', retryAfterSeconds: expect.any(Number) },
            },
          ]);
        }
        expect((await request(limited, 'GET', '/v1/pets')).status).toBe(429);
      } finally {
        await limited.close();
      }
    });

    test(`when a connection runs ${SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection} petEvents and petCreated at once, then the next of either is refused with TOO_MANY_REQUESTS`, async () => {
      const c = await client();
      for (let i = 0; i < SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection; i++) {
        subscribe(c, i % 2 === 0 ? 'subscription { petEvents { cursor } }' : 'subscription { petCreated { id } }');
      }
      await untilActive(metrics, SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection);
      const refused = await subscribe(c, 'subscription { petEvents { cursor } }').error();
      expect(refused).toEqual([{ message: expect.stringMatching(/^Too many subscriptions on this connection/), extensions: { code: 'TOO_MANY_REQUESTS' } }]);
    });

    test('when a petEvents document is priced over the cost limit, then it is refused before it runs, as petCreated is', async () => {
      const c = await client();
      const fragments = `fragment F on Pet { ${'...G '.repeat(300)}} fragment G on Pet { id name categoryId status }`;
      for (const [query, cost] of [
        [`subscription { petCreated { ...F } } ${fragments}`, '1,200'],
        [`subscription { petEvents { pet { ...F } } } ${fragments}`, '1,201'],
      ]) {
        expect(await subscribe(c, query).error()).toEqual([
          expect.objectContaining({ message: `Query cost ${cost} exceeds the maximum of 1,000.`, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }),
        ]);
      }
      expect(await followers(metrics)).toBe(0);
    });

    test('when a publishable key subscribes to petEvents, then only a trusted document runs, by its id', async () => {
      const PET_EVENTS = 'subscription PetEvents($after: String) { petEvents(after: $after) { cursor pet { id name } } }';
      const folder = await mkdtemp(path.join(tmpdir(), 'pet-events-trusted-'));
      const manifest = path.join(folder, 'persisted-documents.json');
      await writeFile(manifest, JSON.stringify({ [sha256Hex(PET_EVENTS)]: PET_EVENTS }));
      const trustedMetrics = createMetrics();
      const trusted = await startTestApp({ env: { TRUSTED_DOCUMENTS: manifest }, observe: { metrics: trustedMetrics } });
      try {
        const publishable = (await trusted.apiKeys.create({ name: 'web', kind: 'publishable' })).key;
        const { client: c } = await connectWithKey(trusted, publishable);
        clients.push(c);
        expect((await subscribe(c, PET_EVENTS).error()).map((error) => error.extensions?.code)).toEqual(['PERSISTED_QUERY_ID_REQUIRED']);
        const byId = subscribe(c, { query: '', documentId: `sha256:${sha256Hex(PET_EVENTS)}` });
        await untilActive(trustedMetrics, 1);
        const [pet] = await createAll(['Trusted'], 'available', trusted);
        expect(((await byId.pets(1)) as Event[])[0].pet).toEqual({ id: pet.id, name: 'Trusted' });
      } finally {
        await trusted.close();
      }
    });
  });

  describe('leaving the feed', () => {
    test('when a client completes a subscription or closes its socket, then its follower is removed', async () => {
      const { client: c } = await connectWithKey(t);
      const a = subscribe(c, `subscription { petEvents { cursor } }`);
      subscribe(c, `subscription { petCreated { id } }`);
      await untilActive(metrics, 2);
      expect(await followers(metrics)).toBe(2);
      a.unsubscribe();
      await untilFollowers(metrics, 1);
      await c.dispose();
      await untilFollowers(metrics, 0);
    });

    test('when the key is revoked, then its socket is closed with 4403 and its subscriptions leave the feed', async () => {
      const created = await t.apiKeys.create('to-revoke');
      const { client: c, closed } = await connectWithKey(t, created.key);
      clients.push(c);
      subscribe(c, `subscription { petEvents { cursor } }`);
      subscribe(c, `subscription { petCreated { id } }`);
      await untilFollowers(metrics, 2);
      await t.apiKeys.revoke(created.apiKey.id);
      expect(await closed).toEqual(SUBSCRIPTION_CLOSE.revoked);
      await untilFollowers(metrics, 0);
    });

    test('when the server shuts down, then every subscription leaves the feed', async () => {
      const ownMetrics = createMetrics();
      const own = await startTestApp({ observe: { metrics: ownMetrics } });
      const { client: c } = await connectWithKey(own);
      clients.push(c);
      subscribe(c, `subscription { petEvents { cursor } }`);
      subscribe(c, `subscription { petCreated { id } }`);
      await untilFollowers(ownMetrics, 2);
      await own.close();
      await untilFollowers(ownMetrics, 0);
    });

    test('when a peer stops reading while its replay floods it, then it is closed with 1008 and leaves the feed at once, not after the close wait', async () => {
      const ownMetrics = createMetrics();
      const warnings: Array<{ msg: string; closeCode?: number }> = [];
      const logger = createLogger('warn', { write: (line) => void warnings.push(JSON.parse(line)) });
      const own = await startTestApp({ observe: { metrics: ownMetrics, logger } });
      let tcp: Socket | undefined;
      try {
        // About 1.7 KiB per event (15 aliases of a 100-character name): 6000 events are far more than 1 MiB and the socket buffers.
        const PETS = 6000;
        const name = 'N'.repeat(100);
        for (let i = 0; i < PETS; i += 300) {
          const rows = Array.from({ length: Math.min(300, PETS - i) }, () => [name, 1, 'available']);
          await own.dataSource.query(`INSERT INTO pet (name, category_id, status) VALUES ${rows.map(() => '(?, ?, ?)').join(', ')}`, rows.flat());
        }
        await until(async () => (await metricValue(ownMetrics, 'petstore_feed_position')) >= PETS, 'the feed to stamp and read every pet', 30_000);
        const createConnection = ((options: NetConnectOpts) => (tcp = connectTcp(options))) as typeof connectTcp;
        const socket = new WebSocket(wsUrl(own), 'graphql-transport-ws', { createConnection });
        socket.on('error', () => undefined);
        await new Promise((resolve) => socket.once('open', resolve));
        socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${own.apiKey}` } }));
        await new Promise((resolve) => socket.once('message', resolve));
        tcp!.pause();
        const selection = Array.from({ length: 15 }, (_, i) => `a${i}: pet { name }`).join(' ');
        const after = encodeEventCursor(1);
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: `subscription { petEvents(after: "${after}") { ${selection} } }` } }));
        const sentAt = Date.now();
        await until(async () => (await metricValue(ownMetrics, 'petstore_subscription_events_total')) > 0, 'the replay to start');
        await until(() => warnings.some((line) => line.closeCode === SUBSCRIPTION_CLOSE.slowConsumer.code), 'the 1008 close', 20_000);
        await untilFollowers(ownMetrics, 0);
        // ws would wait 30 s for the paused peer's close frame before cutting it.
        expect(Date.now() - sentAt).toBeLessThan(15_000);
        await until(async () => (await metricValue(ownMetrics, 'petstore_subscriptions_active')) === 0, 'the subscription to end');
        socket.terminate();
      } finally {
        tcp?.destroy();
        await own.close();
      }
    }, 60_000);
  });

  describe('resuming on another instance', () => {
    test('when the app is replaced by a new one on the same database, then a cursor from the old one resumes there, then goes live', async () => {
      const { database, drop } = await createProcessDatabase('pet-events-');
      try {
        const firstMetrics = createMetrics();
        const first = await startTestApp({ database, observe: { metrics: firstMetrics } });
        let seen: Event[];
        try {
          const { client: c } = await connectWithKey(first);
          clients.push(c);
          const watcher = await observer(c, firstMetrics);
          await createAll(['R1', 'R2', 'R3'], 'available', first);
          seen = (await watcher.pets(3)) as Event[];
          await c.dispose();
        } finally {
          await first.close();
        }
        const second = await startTestApp({ database });
        try {
          const c = await client(second);
          const resumed = subscribe(c, `subscription($after: String) { petEvents(after: $after) { ${EVENT_FIELDS} } }`, { after: seen[0].cursor });
          expect(((await resumed.pets(2)) as Event[]).map((event) => event.cursor)).toEqual(seen.slice(1).map((event) => event.cursor));
          const [live] = await createAll(['R4'], 'available', second);
          expect(((await resumed.pets(3)) as Event[])[2].pet).toEqual(live);
          await c.dispose();
        } finally {
          await second.close();
        }
      } finally {
        await drop();
      }
    });

    testOnMysql('when two instances share the database, then a cursor from one resumes on the other, which then sends the pets either stores', async () => {
      const { database, drop } = await createProcessDatabase('pet-events-');
      const aMetrics = createMetrics();
      const [a, b] = [await startTestApp({ database, observe: { metrics: aMetrics } }), await startTestApp({ database })];
      try {
        const onA = await client(a);
        const watcher = await observer(onA, aMetrics);
        await createAll(['M1', 'M2'], 'available', a);
        const seen = (await watcher.pets(2)) as Event[];
        const onB = await client(b);
        const resumed = subscribe(onB, `subscription($after: String) { petEvents(after: $after) { ${EVENT_FIELDS} } }`, { after: seen[0].cursor });
        expect(((await resumed.pets(1)) as Event[])[0].cursor).toBe(seen[1].cursor);
        const [fromA] = await createAll(['M3'], 'available', a);
        const [fromB] = await createAll(['M4'], 'available', b);
        expect(((await resumed.pets(3)) as Event[]).slice(1).map((event) => event.pet)).toEqual([fromA, fromB]);
      } finally {
        for (const c of clients.splice(0)) await c.dispose();
        await a.close();
        await b.close();
        await drop();
      }
    });
  });
});
