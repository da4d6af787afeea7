import type { GraphQLSchema } from 'graphql';
import { buildSchema } from 'type-graphql';
import { PetResolver } from '../pets/pet.resolver';

/**
 * Builds the GraphQL schema from the type-graphql classes.
 *
 * @param petResolver - the resolver instance to serve (shared with the REST controller);
 *   omit it to build the schema for printing only.
 * @returns the executable schema. Validation is not left to type-graphql: the resolvers
 *   call the shared validator, so REST gets the same rules.
 */
export function buildPetStoreSchema(petResolver?: PetResolver): Promise<GraphQLSchema> {
  return buildSchema({
    resolvers: [PetResolver],
    container: { get: () => petResolver },
    validate: false,
  });
}
