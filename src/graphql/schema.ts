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
 * Builds the GraphQL schema from the type-graphql classes: queries and the mutation
 * (pet.resolver.ts), and the subscription (pet-subscription.resolver.ts).
 *
 * @param petService - the pet operations to serve (shared with the REST controller); omit it
 *   to build the schema for printing only.
 * @param pubSub - where `Subscription.petCreated` listens (the pet event bus); an empty
 *   in-memory one when omitted (printing, or an app without subscribers).
 * @returns the executable schema. Validation is not left to type-graphql: PetService applies
 *   the input rules, so REST gets the same ones.
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
