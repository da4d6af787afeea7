import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Database } from '../database/database';
import type { PetEvents } from '../pets/pet-events';
import { FeedSequencer } from './feed-sequencer';
import { PetFeed } from './pet-feed';
import { PetFeedRepository } from './pet-feed.repository';
import { type RedisHealthMonitor, redisConnectionOptions } from '../observability/redis-health.monitor';

/**
 * `REDIS_URL` and `PET_EVENTS_CHANNEL` (docs/events.md); without Redis, instances find new events by polling alone.
 * `redisHealth` reports Redis's outages, so the bus's connections log their errors at debug only.
 */
export interface PetEventBusOptions {
  readonly database: Database;
  readonly redisUrl?: string;
  readonly redisHealth?: RedisHealthMonitor;
  readonly channel: string;
  readonly log: Pick<Logger, 'warn' | 'info' | 'debug'>;
}

/** The change feed of one instance: its sequencer, and its view of the feed, which every subscription and stream follows. */
export interface PetEventBus extends PetEvents {
  readonly feed: PetFeed;
  readonly sequencer: FeedSequencer;
  close(): Promise<void>;
}

/** A message on the channel: the leader moved the head, or an instance stored a pet the leader should stamp now. */
type FeedPoke = { head: number } | { stored: true };

/**
 * Starts the change feed (docs/events.md "How it works"): the sequencer stamps committed pets on the lease holder; each
 * instance reads past its last event when poked and on its own ticks. With Redis, pokes travel on `channel` so an event
 * reaches every instance within milliseconds; without it (or while it is away) the ticks alone bring it within
 * PET_FEED_LIMITS.stampEveryMs + followEveryMs. Redis carries no event: losing a poke delays, never loses.
 */
export async function startPetEventBus({ database, redisUrl, redisHealth, channel, log }: PetEventBusOptions): Promise<PetEventBus> {
  const repository = new PetFeedRepository(database);
  const feed = new PetFeed(repository, log);
  await feed.start();

  // A poke is not worth waiting for: while Redis is away it fails at once, and the ticks find the event.
  const publisher = redisUrl ? new Redis(redisUrl, redisConnectionOptions({ maxRetriesPerRequest: 0, enableOfflineQueue: false })) : undefined;
  // A subscribed connection can do nothing else, hence two; it retries forever: a subscription is never given up.
  const subscriber = redisUrl ? new Redis(redisUrl, redisConnectionOptions({ maxRetriesPerRequest: null })) : undefined;
  const poke = (message: FeedPoke) =>
    publisher?.publish(channel, JSON.stringify(message)).catch((error: unknown) => {
      // An outage is reported once by the health monitor, not once per event.
      if (redisHealth) log.debug({ err: error, channel }, 'pet feed: poke not published');
      else log.warn({ err: error, channel }, 'pet feed: poke not published');
    });

  const sequencer = new FeedSequencer(
    repository,
    (head) => {
      feed.advance();
      void poke({ head });
    },
    log,
  );
  for (const connection of [publisher, subscriber]) {
    if (!connection) continue;
    if (redisHealth) redisHealth.watch(connection, 'pet feed');
    else connection.on('error', (error) => log.warn({ err: error, channel }, 'pet events store (Redis) unreachable'));
  }
  subscriber?.on('message', (from: string, message: string) => {
    if (from !== channel) return;
    let parsed: FeedPoke;
    try {
      parsed = JSON.parse(message) as FeedPoke;
    } catch (error) {
      log.warn({ err: error, channel }, 'unreadable pet feed poke ignored');
      return;
    }
    if ('head' in parsed) {
      if (parsed.head > feed.position) feed.advance();
    } else if (sequencer.isLeader) {
      sequencer.nudge();
    }
  });
  subscriber?.subscribe(channel).catch((error: unknown) => log.warn({ err: error, channel }, 'pet events: cannot subscribe'));
  sequencer.start();

  return {
    feed,
    sequencer,
    stored: () => {
      if (sequencer.isLeader || !publisher) sequencer.nudge();
      else void poke({ stored: true });
    },
    close: async () => {
      await sequencer.close();
      await feed.close();
      subscriber?.disconnect();
      publisher?.disconnect();
    },
  };
}
