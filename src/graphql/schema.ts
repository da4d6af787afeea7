import { createPubSub } from '@graphql-yoga/subscription';
import type { GraphQLSchema } from 'graphql';
import { buildSchema } from 'type-graphql';
import type { PetPubSub } from '../events/pet-event.bus';
import type { PetService } from '../pets/pet.service';
import { SafeInt } from '../pets/safe-int.type';
import { PetSubscriptionResolver } from './pet-subscription.resolver';
import { PetResolver } from './pet.resolver';
import { SafeIntScalar } from './safe-int.scalar';

/**
 * Builds the executable GraphQL schema; without `petService`, for printing only. type-graphql's
 * validation is off: PetService applies the input rules, so REST gets the same ones.
 */
export function buildPetStoreSchema(petService?: PetService, pubSub: PetPubSub = createPubSub()): Promise<GraphQLSchema> {
  const resolvers = new Map<unknown, unknown>([
    [PetResolver, petService && new PetResolver(petService)],
    [PetSubscriptionResolver, new PetSubscriptionResolver()],
  ]);
  return buildSchema({
    resolvers: [PetResolver, PetSubscriptionResolver],
    container: { get: (resolverClass) => resolvers.get(resolverClass) },
    pubSub,
    scalarsMap: [{ type: SafeInt, scalar: SafeIntScalar }],
    validate: false,
  });
}
