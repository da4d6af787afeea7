import { ArgsType, Field, ObjectType } from 'type-graphql';
import { PET_LIMITS } from '../limits';
import { AfterCursor, PageSize, StatusFilter } from '../pets/pet.inputs';
import { Pet } from '../pets/pet.entity';
import type { PetStatus } from '../pets/pet-status.enum';

@ObjectType({ description: 'A pet in a page of `petsConnection`.' })
export class PetEdge {
  @Field({ description: 'Pass as `after` to continue the list after this pet.' })
  cursor!: string;

  @Field(() => Pet)
  node!: Pet;
}

@ObjectType({ description: 'Where this page stands in the list (Relay PageInfo).' })
export class PageInfo {
  @Field({ description: 'Whether more pets matched after this page when it was read.' })
  hasNextPage!: boolean;

  @Field({ description: 'Whether this page was asked for with `after`, i.e. is not the first.' })
  hasPreviousPage!: boolean;

  @Field(() => String, { nullable: true, description: "The first edge's cursor; null when the page is empty." })
  startCursor!: string | null;

  @Field(() => String, { nullable: true, description: "The last edge's cursor, to pass as `after` for the next page; null when the page is empty." })
  endCursor!: string | null;
}

/** A page of listPets as a Relay connection (docs/pagination.md). */
@ObjectType({ description: 'A page of animals in ascending id order (Relay cursor connection).' })
export class PetConnection {
  @Field(() => [PetEdge])
  edges!: PetEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

/** `first` is listPets' `limit`, with its rules. */
@ArgsType()
export class PetsConnectionArgs {
  @PageSize()
  first: number = PET_LIMITS.listDefault;

  // Or null: no cursor.
  @AfterCursor()
  after?: string;

  @StatusFilter()
  status?: PetStatus | null;
}
