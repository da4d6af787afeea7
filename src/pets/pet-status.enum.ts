import { registerEnumType } from 'type-graphql';

/** Availability (spec "PetStatus"); lower case in GraphQL too, so both surfaces spell values alike. */
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
