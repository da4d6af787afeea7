import type { Pool } from 'mysql2/promise';
import { type PetJson, getPet, insertPet, listPets } from './pet-mysql.queries';

/**
 * The schema of the SDL peers (yoga-jit, mercurius-jit) as their users write one: SDL and a
 * resolver map over mysql2, the service's field names and result shapes (`categoryId` an Int
 * where the service has its SafeInt scalar; both serialise a number). Shared so that the two
 * peers differ only in their server.
 */
export const PET_TYPE_DEFS = /* GraphQL */ `
  enum PetStatus {
    available
    pending
    sold
  }
  type Pet {
    id: ID!
    name: String!
    categoryId: Int!
    status: PetStatus!
  }
  input NewPetInput {
    name: String!
    categoryId: Int!
    status: PetStatus! = available
  }
  type Query {
    pets(limit: Int = 20, status: PetStatus): [Pet!]!
    pet(id: ID!): Pet
  }
  type Mutation {
    createPet(input: NewPetInput!): Pet!
  }
`;

/** The resolver map of {@link PET_TYPE_DEFS}, over a mysql2 pool. */
export function petResolvers(pool: Pool) {
  return {
    Query: {
      pets: (_: unknown, { limit, status }: { limit: number; status?: string | null }) => listPets(pool, limit, status ?? undefined),
      pet: async (_: unknown, { id }: { id: string }) => (await getPet(pool, id)) ?? null,
    },
    Mutation: {
      createPet: (_: unknown, { input }: { input: Omit<PetJson, 'id'> }) => insertPet(pool, input),
    },
  };
}
