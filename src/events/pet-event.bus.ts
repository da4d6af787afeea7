import { setMaxListeners } from 'node:events';
import { type PubSub, createPubSub } from '@graphql-yoga/subscription';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { PetEvents } from '../pets/pet-events';
import type { Pet } from '../pets/pet.entity';
import { REDIS_TIMEOUTS } from '../limits';

/** The in-process topic `Subscription.petCreated` listens to. */
export const PET_CREATED_TOPIC = 'petCreated';

/** The spec's four Pet fields, JSON-safe (int64 values are safe integers). */
export type PetCreatedPayload = Pick<Pet, 'id' | 'name' | 'categoryId' | 'status'>;

/** As type-graphql's `buildSchema({ pubSub })` takes it. */
export type PetPubSub = PubSub<{ [PET_CREATED_TOPIC]: [PetCreatedPayload] }>;

/** `REDIS_URL` and `PET_EVENTS_CHANNEL` (docs/subscriptions.md); without Redis, events stay in this process. */
export interface PetEventBusOptions {
  readonly redisUrl?: string;
  readonly channel: string;
  readonly log: Pick<Logger, 'warn'>;
}

/** The transport behind the PetEvents port (see PetEvents), and the pub/sub that every instance's events land in. */
export interface PetEventBus extends PetEvents {
  readonly pubSub: PetPubSub;
  close(): Promise<void>;
}

/**
 * Pet events in memory, or through Redis pub/sub as JSON on `channel` (docs/subscriptions.md). With Redis, this instance's
 * events reach its subscribers through Redis too, so each arrives once; events sent while Redis is away are lost.
 */
export function createPetEventBus({ redisUrl, channel, log }: PetEventBusOptions): PetEventBus {
  // One listener per subscription, bounded by the subscription limits; Node would warn of a leak at the 11th.
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
  // A subscribed connection can do nothing else, hence two; it retries forever: a subscription is never given up.
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
