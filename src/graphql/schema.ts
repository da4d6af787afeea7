import { createPubSub } from '@graphql-yoga/subscription';
import type { GraphQLSchema } from 'graphql';
import { buildSchema } from 'type-graphql';
import type { PetService } from '../pets/pet.service';
import { SafeInt } from '../pets/safe-int.type';
import { PetSubscriptionResolver } from './pet-subscription.resolver';
import { PetResolver } from './pet.resolver';
import { SafeIntScalar } from './safe-int.scalar';

/**
 * Builds the executable GraphQL schema; without `petService`, for printing only. type-graphql's
 * validation is off: PetService applies the input rules, so REST gets the same ones. The
 * subscriptions follow the change feed of their context (SubscriptionContext).
 */
export function buildPetStoreSchema(petService?: PetService): Promise<GraphQLSchema> {
  const resolvers = new Map<unknown, unknown>([
    [PetResolver, petService && new PetResolver(petService)],
    [PetSubscriptionResolver, new PetSubscriptionResolver()],
  ]);
  return buildSchema({
    resolvers: [PetResolver, PetSubscriptionResolver],
    container: { get: (resolverClass) => resolvers.get(resolverClass) },
    // type-graphql refuses to build Subscription fields without one, though ours `subscribe` themselves and never use it.
    pubSub: createPubSub(),
    scalarsMap: [{ type: SafeInt, scalar: SafeIntScalar }],
    validate: false,
  });
}
