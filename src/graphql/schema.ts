import type { GraphQLSchema } from 'graphql';
import { buildSchema } from 'type-graphql';
import type { PetService } from '../pets/pet.service';
import { PetResolver } from './pet.resolver';

/**
 * Builds the GraphQL schema from the type-graphql classes.
 *
 * @param petService - the pet operations to serve (shared with the REST controller); omit it
 *   to build the schema for printing only.
 * @returns the executable schema. Validation is not left to type-graphql: PetService applies
 *   the input rules, so REST gets the same ones.
 */
export function buildPetStoreSchema(petService?: PetService): Promise<GraphQLSchema> {
  const resolver = petService && new PetResolver(petService);
  return buildSchema({
    resolvers: [PetResolver],
    container: { get: () => resolver },
    validate: false,
  });
}
