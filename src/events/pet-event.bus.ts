import { setMaxListeners } from 'node:events';
import { type PubSub, createPubSub } from '@graphql-yoga/subscription';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { PetEvents } from '../pets/pet-events';
import type { Pet } from '../pets/pet.entity';
import { REDIS_TIMEOUTS } from '../limits';

/** The topic of the in-process pub/sub that `Subscription.petCreated` listens to (type-graphql `topics`). */
export const PET_CREATED_TOPIC = 'petCreated';

/** The pet as an event carries it: the four fields of the spec's Pet, JSON-safe (int64 values are safe integers). */
export type PetCreatedPayload = Pick<Pet, 'id' | 'name' | 'categoryId' | 'status'>;

/** The in-process pub/sub of pet events, as type-graphql's `buildSchema({ pubSub })` takes it. */
export type PetPubSub = PubSub<{ [PET_CREATED_TOPIC]: [PetCreatedPayload] }>;

/** Where pet events travel (docs/subscriptions.md, `REDIS_URL`, `PET_EVENTS_CHANNEL`). */
export interface PetEventBusOptions {
  /** Redis for events between instances; in this process only when absent. */
  readonly redisUrl?: string;
  /** The Redis pub/sub channel, one per deployment sharing a Redis. */
  readonly channel: string;
  /** Where delivery problems are logged (at `warn`): events are best effort. */
  readonly log: Pick<Logger, 'warn'>;
}

/** The transport behind the {@link PetEvents} port, and the pub/sub the subscription resolver reads. */
export interface PetEventBus extends PetEvents {
  /** What `petCreated` subscribers listen to: every event of every instance (with Redis) lands here. */
  readonly pubSub: PetPubSub;
  /** Drops the Redis connections; events published afterwards are lost. */
  close(): Promise<void>;
}

/**
 * Pet events, in memory or through Redis pub/sub (docs/subscriptions.md):
 * - without `redisUrl`, `created(pet)` publishes straight to the in-process pub/sub
 *   (`@graphql-yoga/subscription`), so only this instance's subscribers hear of it;
 * - with it, `created(pet)` PUBLISHes `{"id","name","categoryId","status"}` (JSON) on `channel`
 *   through one connection, and a second connection (a subscribed Redis connection can do
 *   nothing else) SUBSCRIBEs to `channel` and hands every message to the in-process pub/sub: an
 *   event reaches the subscribers of every instance, this one included, exactly once each.
 *   ioredis reconnects and subscribes again by itself; events published while Redis is away are
 *   lost (pub/sub keeps nothing), and a failed PUBLISH is logged, never raised to the create.
 *
 * @returns the bus; close it when the app closes.
 */
export function createPetEventBus({ redisUrl, channel, log }: PetEventBusOptions): PetEventBus {
  // One listener per running subscription, which the subscription limits bound: Node's default
  // of 10 per EventTarget would warn of a leak at the 11th.
  const eventTarget = new EventTarget();
  setMaxListeners(0, eventTarget);
  const pubSub: PetPubSub = createPubSub({ eventTarget });
  const payloadOf = (pet: Pet): PetCreatedPayload => ({ id: pet.id, name: pet.name, categoryId: pet.categoryId, status: pet.status });
  if (!redisUrl) {
    return {
      pubSub,
      created: (pet) => pubSub.publish(PET_CREATED_TOPIC, payloadOf(pet)),
      close: async () => undefined,
    };
  }
  const publisher = new Redis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: REDIS_TIMEOUTS.connectMs });
  // Waits for Redis as long as it takes: a subscription is never given up.
  const subscriber = new Redis(redisUrl, { maxRetriesPerRequest: null, connectTimeout: REDIS_TIMEOUTS.connectMs });
  for (const connection of [publisher, subscriber]) {
    connection.on('error', (error) => log.warn({ err: error, channel }, 'pet events store (Redis) unreachable'));
  }
  subscriber.on('message', (from: string, message: string) => {
    if (from !== channel) return;
    let payload: PetCreatedPayload;
    try {
      payload = JSON.parse(message) as PetCreatedPayload;
    } catch (error) {
      log.warn({ err: error, channel }, 'unreadable pet event ignored');
      return;
    }
    pubSub.publish(PET_CREATED_TOPIC, payload);
  });
  subscriber.subscribe(channel).catch((error: unknown) => log.warn({ err: error, channel }, 'pet events: cannot subscribe'));
  return {
    pubSub,
    created: (pet) => {
      publisher.publish(channel, JSON.stringify(payloadOf(pet))).catch((error: unknown) => log.warn({ err: error, channel }, 'pet event not published'));
    },
    close: async () => {
      subscriber.disconnect();
      publisher.disconnect();
    },
  };
}
