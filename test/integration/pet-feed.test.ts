import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import type { Database } from '../../src/database/database';
import { FeedSequencer } from '../../src/events/feed-sequencer';
import { PetFeed } from '../../src/events/pet-feed';
import { type PetEvent, PetFeedRepository } from '../../src/events/pet-feed.repository';
import { PetStatus } from '../../src/pets/pet-status.enum';
import { PET_FEED_LIMITS } from '../../src/limits';
import { createMetrics } from '../../src/observability/metrics.registry';
import { STAMP_TRANSACTION, countStatements } from '../helpers/statement-counter';
import { createPet, startTestApp } from '../helpers/test-app';
import { openTestDatabase, testOnMysql } from '../helpers/test-database';

const quiet = { warn: () => undefined, info: () => undefined };

/** Resolves once `check` holds, polling every 10 ms; rejects after `ms`. */
async function until(check: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const giveUpAt = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error('timed out');
    await sleep(10);
  }
}

/** Takes `count` events from `events`. */
async function take(events: AsyncIterator<PetEvent>, count: number): Promise<PetEvent[]> {
  const taken: PetEvent[] = [];
  while (taken.length < count) {
    const next = await events.next();
    if (next.done) break;
    taken.push(next.value);
  }
  return taken;
}

describe('the change feed on the database', () => {
  let database: Database;
  let dataSource: DataSource;
  let close: () => Promise<void>;
  let repository: PetFeedRepository;
  const insertPets = async (count: number, status = PetStatus.available) => {
    for (let i = 0; i < count; i++) await dataSource.query('INSERT INTO pet (name, category_id, status) VALUES (?, ?, ?)', [`p${i}`, 1, status]);
  };
  const petCount = async () => Number((await dataSource.query('SELECT COUNT(*) AS n FROM pet'))[0].n);

  beforeEach(async () => {
    ({ database, dataSource, close } = await openTestDatabase());
    repository = new PetFeedRepository(database);
  });
  afterEach(() => close());

  test('when committed pets wait, then the sequencer stamps each once with positions 1 … n, and the feed lists them in that order', async () => {
    await insertPets(30);
    await insertPets(12, PetStatus.sold);
    const sequencer = new FeedSequencer(repository, () => undefined, quiet, { ...PET_FEED_LIMITS, stampBatch: 7 });
    sequencer.start();
    await until(async () => (await repository.head()) === 42);
    await sequencer.close();
    const events = await repository.read({ after: 0, limit: 100 });
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 42 }, (_, i) => i + 1));
    expect(new Set(events.map((event) => event.pet.id)).size).toBe(42);
    const sold = await repository.read({ after: 0, limit: 100, status: PetStatus.sold });
    expect(sold.map((event) => event.seq)).toEqual(Array.from({ length: 12 }, (_, i) => i + 31));
    expect(await repository.read({ after: 35, upTo: 38, limit: 100 })).toHaveLength(3);
  });

  testOnMysql(
    'when a lower id commits after a higher one was stamped, then it takes the next position: nothing is skipped, the feed is in commit order',
    async () => {
      const sequencer = new FeedSequencer(repository, () => undefined, quiet);
      sequencer.start();
      const slow = dataSource.createQueryRunner();
      await slow.connect();
      await slow.startTransaction();
      const { insertId: lowId } = await slow.query("INSERT INTO pet (name, category_id, status) VALUES ('slow', 1, 'available')");
      await insertPets(3);
      await until(async () => (await repository.head()) === 3);
      await slow.commitTransaction();
      await slow.release();
      await until(async () => (await repository.head()) === 4);
      await sequencer.close();
      const events = await repository.read({ after: 0, limit: 10 });
      expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4]);
      expect(events[3].pet.id).toBe(Number(lowId));
      expect(events.slice(0, 3).every((event) => event.pet.id > Number(lowId))).toBe(true);
    },
  );

  testOnMysql('when two instances sequence, then one holds the lease; when it closes, the other takes over and nothing is stamped twice', async () => {
    const [first, second] = [new FeedSequencer(repository, () => undefined, quiet), new FeedSequencer(repository, () => undefined, quiet)];
    first.start();
    await until(() => first.isLeader);
    second.start();
    await insertPets(20);
    await until(async () => (await repository.head()) === 20);
    expect(second.isLeader).toBe(false);
    await first.close();
    await until(() => second.isLeader, PET_FEED_LIMITS.claimEveryMs * 3);
    await insertPets(5);
    await until(async () => (await repository.head()) === 25);
    await second.close();
    const events = await repository.read({ after: 0, limit: 100 });
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(new Set(events.map((event) => event.pet.id)).size).toBe(25);
    expect(await petCount()).toBe(25);
  });

  test('when a follower starts after position 5, then it gets the rest from the table and then each new event, once, in order', async () => {
    await insertPets(10);
    const feed = new PetFeed(repository, quiet);
    const sequencer = new FeedSequencer(repository, () => feed.advance(), quiet);
    await feed.start();
    sequencer.start();
    const follower = feed.follow({ after: 5 });
    const replayed = take(follower, 5);
    expect((await replayed).map((event) => event.seq)).toEqual([6, 7, 8, 9, 10]);
    await insertPets(4);
    expect((await take(follower, 4)).map((event) => event.seq)).toEqual([11, 12, 13, 14]);
    await follower.return?.();
    expect(feed.followerCount).toBe(0);
    await sequencer.close();
    await feed.close();
  });

  test('when a follower without a position reads nothing for a while, then it starts from now; when more events wait than the instance keeps, it reads them from the table', async () => {
    await insertPets(3);
    const feed = new PetFeed(repository, quiet, { ...PET_FEED_LIMITS, recentEvents: 5, readBatch: 4, replayBatch: 3 });
    const sequencer = new FeedSequencer(repository, () => feed.advance(), quiet);
    sequencer.start();
    await until(async () => (await repository.head()) === 3);
    await feed.start();
    const fromNow = feed.follow({});
    const filtered = feed.follow({ status: PetStatus.sold });
    await insertPets(20);
    await insertPets(2, PetStatus.sold);
    await until(() => feed.position === 25);
    expect((await take(fromNow, 22)).map((event) => event.seq)).toEqual(Array.from({ length: 22 }, (_, i) => i + 4));
    expect((await take(filtered, 2)).map((event) => [event.seq, event.pet.status])).toEqual([
      [24, 'sold'],
      [25, 'sold'],
    ]);
    // A follower waiting for its next event ends when returned.
    const waiting = fromNow.next();
    await fromNow.return?.();
    await filtered.return?.();
    expect((await waiting).done).toBe(true);
    expect(feed.followerCount).toBe(0);
    await sequencer.close();
    await feed.close();
  });
  test('when nobody follows, then the instance reads only where the feed stands, tells of each advance, and a follower that comes later replays every event once, in order', async () => {
    const feed = new PetFeed(repository, quiet);
    const sequencer = new FeedSequencer(repository, () => feed.advance(), quiet);
    await feed.start();
    sequencer.start();
    let advances = 0;
    feed.onAdvance(() => advances++);
    const statements = countStatements(dataSource);
    await insertPets(6);
    await until(() => feed.position === 6);
    expect(advances).toBeGreaterThan(0);
    expect(statements.count(/seq[`"]? > \?/)).toBe(0);

    const follower = feed.follow({ after: 0 });
    expect((await take(follower, 6)).map((event) => event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    await insertPets(2);
    expect((await take(follower, 2)).map((event) => event.seq)).toEqual([7, 8]);
    await follower.return?.();
    await sequencer.close();
    await feed.close();
  });
  test('when pets are stored with nobody following, then each run stamps without looking first and the feed moves to the head its sequencer told of without reading it', async () => {
    // Ticks far apart, so only the first look, the stores' nudges and the advances they bring run.
    const limits = { ...PET_FEED_LIMITS, stampEveryMs: 60_000, followEveryMs: 60_000 };
    const feed = new PetFeed(repository, quiet, limits);
    const sequencer = new FeedSequencer(repository, (head) => feed.advance(head), quiet, limits);
    await feed.start();
    sequencer.start();
    await until(() => sequencer.isLeader);
    const statements = countStatements(dataSource);
    for (let i = 1; i <= 3; i++) {
      await insertPets(1);
      sequencer.stored();
      await until(() => feed.position === i);
    }
    expect(statements.count(/seq IS NULL LIMIT 1/)).toBe(0);
    expect(statements.count(/SELECT [`"]?feed[`"]?\.[`"]?head[`"]? AS [`"]head[`"] FROM [`"]pet_feed[`"](?![\s\S]*valid)/)).toBe(0);
    expect(statements.count(STAMP_TRANSACTION)).toBe(3);
    await sequencer.close();
    await feed.close();
  });
});

describe('the change feed with many followers', () => {
  test('when 300 followers follow while pets are created, then each gets every event once, and the instance reads the table once per advance, not per follower', async () => {
    const { database, dataSource, close } = await openTestDatabase();
    try {
      const repository = new PetFeedRepository(database);
      const feed = new PetFeed(repository, quiet);
      const sequencer = new FeedSequencer(repository, () => feed.advance(), quiet);
      await feed.start();
      sequencer.start();
      const followers = Array.from({ length: 300 }, () => feed.follow({}));
      const statements = countStatements(dataSource);
      const received = followers.map((follower) => take(follower, 40));
      for (let i = 0; i < 40; i++) await dataSource.query('INSERT INTO pet (name, category_id, status) VALUES (?, 1, ?)', [`p${i}`, 'available']);
      const seqs = Array.from({ length: 40 }, (_, i) => i + 1);
      for (const events of await Promise.all(received)) expect(events.map((event) => event.seq)).toEqual(seqs);
      const reads = statements.count(/seq[`"]? > \?/);
      expect(reads).toBeGreaterThan(0);
      expect(reads).toBeLessThan(followers.length / 3);
      for (const follower of followers) await follower.return!();
      expect(feed.followerCount).toBe(0);
      await sequencer.close();
      await feed.close();
    } finally {
      await close();
    }
  });
});

describe('the change feed in the metrics', () => {
  test('when pets are created, then the instance reports itself as the sequencer, the pets it stamped and the position it reached', async () => {
    const metrics = createMetrics();
    const t = await startTestApp({ observe: { metrics } });
    try {
      const value = async (name: string) => (await metrics.registry.getSingleMetric(name)!.get()).values[0]?.value;
      for (let i = 0; i < 3; i++) await createPet(t);
      await until(async () => (await value('petstore_feed_position')) === 3);
      expect(await value('petstore_feed_sequencer_leader')).toBe(1);
      expect(await value('petstore_feed_stamped_total')).toBe(3);
      expect(await value('petstore_feed_followers')).toBe(0);
    } finally {
      await t.close();
    }
  });
});
