import { registerEnumType } from 'type-graphql';

/**
 * Availability of an animal (spec "PetStatus"): exactly these three values, spelled the same
 * on both surfaces (GraphQL enum values are lower case here so that filters and payloads are
 * identical over REST and GraphQL).
 */
export enum PetStatus {
  available = 'available',
  pending = 'pending',
  sold = 'sold',
}

registerEnumType(PetStatus, {
  name: 'PetStatus',
  description: 'Availability of an animal in the store.',
  valuesConfig: {
    available: { description: 'Can be bought.' },
    pending: { description: 'A sale is in progress.' },
    sold: { description: 'Has been sold.' },
  },
});
