import { Arg, Args, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { GET_PET_DEPRECATION } from '../pets/get-pet.deprecation';
import { Node } from '../pets/node.interface';
import { Pet } from '../pets/pet.entity';
import { ListPetsArgs, NewPetInput, PetIdArgs } from '../pets/pet.inputs';
import type { PetPage, PetService } from '../pets/pet.service';
import type { GraphqlContext } from './graphql-context';
import { PetConnection, PetsConnectionArgs } from './pet-connection.types';
import { validateInput } from '../validation/validate-input';
import { connectionFieldCost, databaseFieldCost } from './query-limits';
import { PET_LIMITS } from '../limits';

/** For pricing only: out-of-range values are refused later anyway. */
function listSize(limit: unknown): number {
  return Number.isInteger(limit) ? Math.min(Math.max(limit as number, PET_LIMITS.listMin), PET_LIMITS.listMax) : PET_LIMITS.listMax;
}

function toConnection(page: PetPage): PetConnection {
  const edges = page.pets.map((pet) => ({ cursor: page.cursorAfter(pet), node: pet }));
  return {
    edges,
    pageInfo: {
      hasNextPage: page.hasNextPage,
      hasPreviousPage: page.hasPreviousPage,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}

/** The GraphQL adapter of PetService; arguments go on unvalidated, as PetService applies the one set of rules. */
@Resolver(() => Pet)
export class PetResolver {
  constructor(private readonly petService: PetService) {}

  @Query(() => [Pet], {
    description: 'Lists animals in ascending id order, optionally by status. To page, pass `after` (see `petsConnection`).',
    complexity: ({ args, childComplexity }) => databaseFieldCost(listSize(args.limit), childComplexity),
  })
  async pets(@Args(() => ListPetsArgs) args: ListPetsArgs, @Ctx('caller') caller: GraphqlContext['caller']): Promise<Pet[]> {
    return (await this.petService.listPets(args, caller)).pets;
  }

  /** listPets as a Relay connection; `first` is checked under its own name, then read as `limit`. */
  @Query(() => PetConnection, {
    description: 'Lists animals in ascending id order, optionally by status, a page at a time: pass `pageInfo.endCursor` as `after` for the next page.',
    complexity: ({ args, childComplexity, node }) => connectionFieldCost(listSize(args.first), childComplexity, node),
  })
  async petsConnection(@Args(() => PetsConnectionArgs) args: PetsConnectionArgs, @Ctx('caller') caller: GraphqlContext['caller']): Promise<PetConnection> {
    const { first, after, status } = await validateInput(PetsConnectionArgs, args);
    return toConnection(await this.petService.listPets({ limit: first, after, status }, caller));
  }

  @Query(() => Pet, {
    nullable: true,
    description: 'Returns one animal by identifier, or null when it does not exist.',
    deprecationReason: GET_PET_DEPRECATION.graphqlReason,
    // 1 rate-limit unit, as getPet on REST.
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  pet(@Args(() => PetIdArgs) args: PetIdArgs, @Ctx('caller') caller: GraphqlContext['caller']): Promise<Pet | null> {
    return this.petService.getPet(args, caller);
  }

  /** Relay's refetch by id (docs/graphql.md "Relay"): the pet, as `pet(id:)` finds it, but not a getPet call; invalid ids are refused by PetService alike. */
  @Query(() => Node, {
    nullable: true,
    description: 'Returns the object with this `id` (Relay Global Object Identification), or null when none has it. Every Node is a Pet.',
    // 1 rate-limit unit, as `pet`.
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  async node(
    @Arg('id', () => ID, { description: "The object's `id`, as its `id` field gives it (a pet id)." }) id: string,
    @Ctx('caller') caller: GraphqlContext['caller'],
  ): Promise<Node | null> {
    const pet = await this.petService.findPet({ id }, caller);
    // The repository returns plain rows; Node's type is named by class (src/pets/node.interface.ts).
    return pet && Object.assign(new Pet(), pet);
  }

  /** The Idempotency-Key comes with the caller. */
  @Mutation(() => Pet, {
    description: 'Adds a new animal. Send an Idempotency-Key header to make retries safe.',
    // 1 rate-limit unit, as createPet on REST.
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  async createPet(@Arg('input', () => NewPetInput) input: NewPetInput, @Ctx('caller') caller: GraphqlContext['caller']): Promise<Pet> {
    return (await this.petService.createPet(input, caller)).pet;
  }
}
