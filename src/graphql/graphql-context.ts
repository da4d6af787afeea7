import type { FastifyRequest } from 'fastify';
import type { PetEventService } from '../events/pet-event.service';
import type { Caller } from '../pets/caller';

/** Resolvers see only `caller`; plugins use `request` to charge its rate limit and label its log line. */
export interface GraphqlContext {
  readonly caller: Caller;
  readonly request: FastifyRequest;
}

/**
 * What a subscription over WebSocket sees: its connection's caller, and the change feed's operations its `subscribe`
 * calls, `follow` through its connection's stream (FeedFollowers: the key's validity, pace and metrics at every event).
 */
export interface SubscriptionContext {
  readonly caller: Caller;
  readonly events: Pick<PetEventService, 'streamStart' | 'follow'>;
}
