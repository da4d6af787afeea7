import { graphql } from './gql';

/** A page of pets; `after` is the previous page's `pageInfo.endCursor`. */
export const PETS_PAGE = graphql(`
  query PetsPage($first: Int, $after: String) {
    petsConnection(first: $first, after: $after) {
      edges {
        cursor
        node {
          id
          name
          categoryId
          status
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

export const CREATE_PET = graphql(`
  mutation CreatePet($input: NewPetInput!) {
    createPet(input: $input) {
      id
      name
      categoryId
      status
    }
  }
`);

export const PET_CREATED = graphql(`
  subscription PetCreated {
    petCreated {
      id
      name
      categoryId
      status
    }
  }
`);
