import { Arg, Args, Resolver, Root, Subscription } from 'type-graphql';
import { PetEventsArgs } from '../events/pet-event.inputs';
import type { PetEvent } from '../events/pet-event.service';
import { PetStatus } from '../pets/pet-status.enum';
import { Pet } from '../pets/pet.entity';
import type { SubscriptionContext } from './graphql-context';
import { PetEventObject } from './pet-event.types';
import { databaseFieldCost } from './query-limits';

/** What a subscription's `subscribe` is given by type-graphql. */
interface Subscribing<Args> {
  args: Args;
  context: SubscriptionContext;
}

/**
 * The GraphQL subscriptions, over WebSocket only (docs/subscriptions.md): both follow this instance's change feed, so each
 * ends, and leaves the feed, when graphql-ws returns its iterator (the client completes, or the socket closes).
 */
@Resolver()
export class PetSubscriptionResolver {
  /** The change feed, resumable: `after` is checked, as listPets' is, before anything streams. */
  @Subscription(() => PetEventObject, {
    description:
      'The change feed: replays every event after the one whose `cursor` is `after`, then sends each new one, in feed order and ' +
      'each once, whichever instance stored the pet; from now without `after`. Only pets with `status` when given. Over WebSocket only.',
    // The REST stream's rules and start, through the same service.
    subscribe: async ({ args, context }: Subscribing<PetEventsArgs>) => context.events.follow(await context.events.streamStart(args)),
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  petEvents(@Root() event: PetEvent, @Args(() => PetEventsArgs) _args: PetEventsArgs): PetEventObject {
    return { cursor: event.cursor, type: 'pet.created', pet: event.pet };
  }

  /** Each committed create, on either surface; never an Idempotency-Key replay. */
  @Subscription(() => Pet, {
    description:
      'Each animal added from now on (REST or GraphQL, any instance), after it is stored; only those with `status` when given. ' +
      'Over WebSocket (graphql-transport-ws) only.',
    subscribe: ({ args, context }: Subscribing<{ status?: PetStatus | null }>) => context.events.follow({ status: args.status ?? undefined }),
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  petCreated(
    @Root() event: PetEvent,
    // Read by `subscribe` above; declared here for the schema.
    @Arg('status', () => PetStatus, { nullable: true, description: 'Only pets created with this status.' }) _status?: PetStatus,
  ): Pet {
    return event.pet;
  }
}
