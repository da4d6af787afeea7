import type { Logger } from 'pino';
import type { Database } from '../database/database';
import type { PetEvents } from '../pets/pet-events';
import { FeedSequencer } from './feed-sequencer';
import { PetFeed } from './pet-feed';
import { PetFeedRepository } from './pet-feed.repository';
import type { RedisConnections } from '../redis/redis.connections';

/**
 * The process's Redis connections (`REDIS_URL`) and the pokes' channel, RedisConfig.petFeedChannel (docs/events.md);
 * without Redis, instances find new events by polling alone.
 */
export interface PetEventBusOptions {
  readonly database: Database;
  readonly redis?: Pick<RedisConnections, 'publish' | 'listen'>;
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
export async function startPetEventBus({ database, redis, channel, log }: PetEventBusOptions): Promise<PetEventBus> {
  const repository = new PetFeedRepository(database);
  const feed = new PetFeed(repository, log);
  await feed.start();

  // A poke is not worth waiting for: while Redis is away it fails at once, and the ticks find the event; the outage is
  // reported once by the health monitor, not once per event.
  const poke = (message: FeedPoke) =>
    redis?.publish(channel, JSON.stringify(message)).catch((error: unknown) => log.debug({ err: error, channel }, 'pet feed: poke not published'));

  const sequencer = new FeedSequencer(
    repository,
    (head) => {
      feed.advance(head);
      void poke({ head });
    },
    log,
  );
  redis?.listen(channel, {
    message: (message) => {
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
        sequencer.stored();
      }
    },
    // Pokes missed while the subscription was down: the ticks found those events; read now in case.
    subscribed: () => feed.advance(),
  });
  sequencer.start();

  return {
    feed,
    sequencer,
    stored: () => {
      if (sequencer.isLeader || !redis) sequencer.stored();
      else void poke({ stored: true });
    },
    close: async () => {
      await sequencer.close();
      await feed.close();
    },
  };
}
