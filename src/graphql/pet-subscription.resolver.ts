import { Arg, Resolver, Root, Subscription } from 'type-graphql';
import { PET_CREATED_TOPIC, type PetCreatedPayload } from '../events/pet-event.bus';
import { PetStatus } from '../pets/pet-status.enum';
import { Pet } from '../pets/pet.entity';
import { databaseFieldCost } from './query-limits';

/**
 * The GraphQL subscriptions (docs/subscriptions.md): `petCreated(status)`, served over
 * WebSocket only (graphql-ws, see subscription.server.ts). Events come from the pet event bus
 * (events/pet-event.bus.ts), which PetService feeds after each committed create, on either
 * surface and, with Redis, on any instance.
 */
@Resolver(() => Pet)
export class PetSubscriptionResolver {
  /**
   * Each pet stored from now on, once its create has committed: REST `POST /v1/pets` and GraphQL
   * `createPet` alike; never an Idempotency-Key replay, nor a create that failed.
   *
   * @param pet - the event's pet `{ id, name, categoryId, status }`.
   * @returns the pet, for the subscriber's selection.
   */
  @Subscription(() => Pet, {
    description:
      'Each animal added from now on (REST or GraphQL, any instance), after it is stored; only those with `status` when given. ' +
      'Over WebSocket (graphql-transport-ws) only.',
    topics: PET_CREATED_TOPIC,
    filter: ({ payload, args }: { payload: PetCreatedPayload; args: { status?: PetStatus | null } }) => args.status == null || payload.status === args.status,
    // A subscription costs 100, as one call does (docs/subscriptions.md), and 1 rate-limit unit.
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
