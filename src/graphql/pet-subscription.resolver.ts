import { Arg, Resolver, Root, Subscription } from 'type-graphql';
import { PET_CREATED_TOPIC, type PetCreatedPayload } from '../events/pet-event.bus';
import { PetStatus } from '../pets/pet-status.enum';
import { Pet } from '../pets/pet.entity';
import { databaseFieldCost } from './query-limits';

/** The GraphQL subscriptions, over WebSocket only (docs/subscriptions.md). */
@Resolver(() => Pet)
export class PetSubscriptionResolver {
  /** Each committed create, on either surface; never an Idempotency-Key replay. */
  @Subscription(() => Pet, {
    description:
      'Each animal added from now on (REST or GraphQL, any instance), after it is stored; only those with `status` when given. ' +
      'Over WebSocket (graphql-transport-ws) only.',
    topics: PET_CREATED_TOPIC,
    filter: ({ payload, args }: { payload: PetCreatedPayload; args: { status?: PetStatus | null } }) => args.status == null || payload.status === args.status,
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  petCreated(
    @Root() pet: PetCreatedPayload,
    // Read by `filter` above; declared here for the schema.
    @Arg('status', () => PetStatus, { nullable: true, description: 'Only pets created with this status.' }) _status?: PetStatus,
  ): PetCreatedPayload {
    return pet;
  }
}
