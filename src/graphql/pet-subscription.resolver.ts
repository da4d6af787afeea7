import { Arg, Resolver, Root, Subscription } from 'type-graphql';
import type { PetEvent } from '../events/pet-feed.repository';
import { PetStatus } from '../pets/pet-status.enum';
import { Pet } from '../pets/pet.entity';
import type { SubscriptionContext } from './graphql-context';
import { databaseFieldCost } from './query-limits';

/** What a subscription's `subscribe` is given by type-graphql. */
interface Subscribing<Args> {
  args: Args;
  context: SubscriptionContext;
}

/**
 * The GraphQL subscriptions, over WebSocket only (docs/subscriptions.md): each follows this instance's change feed, so each
 * ends, and leaves the feed, when graphql-ws returns its iterator (the client completes, or the socket closes).
 */
@Resolver()
export class PetSubscriptionResolver {
  /** Each committed create, on either surface; never an Idempotency-Key replay. */
  @Subscription(() => Pet, {
    description:
      'Each animal added from now on (REST or GraphQL, any instance), after it is stored; only those with `status` when given. ' +
      'Over WebSocket (graphql-transport-ws) only.',
    subscribe: ({ args, context }: Subscribing<{ status?: PetStatus | null }>) => context.feed.follow({ status: args.status ?? undefined }),
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
