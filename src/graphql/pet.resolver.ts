import { Arg, Args, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import { GET_PET_DEPRECATION } from '../pets/get-pet.deprecation';
import { Pet } from '../pets/pet.entity';
import { ListPetsArgs, NewPetInput, PetIdArgs } from '../pets/pet.inputs';
import { PET_LIMITS } from '../pets/pet.limits';
import type { PetService } from '../pets/pet.service';
import type { GraphqlContext } from './graphql-context';
import { databaseFieldCost } from './query-limits';

/** How many pets a `limit` argument can return, for pricing: out-of-range values are refused later anyway. */
function listSize(limit: unknown): number {
  return Number.isInteger(limit) ? Math.min(Math.max(limit as number, PET_LIMITS.listMin), PET_LIMITS.listMax) : PET_LIMITS.listMax;
}

/**
 * The GraphQL adapter of the pet operations: declares `pets`, `pet` and `createPet` with their
 * descriptions and query costs, and hands each call to PetService, the same method the REST
 * controller calls. Arguments are passed on unvalidated (type-graphql's validation is off):
 * PetService applies the one set of rules.
 */
@Resolver(() => Pet)
export class PetResolver {
  /** @param petService - the pet operations. */
  constructor(private readonly petService: PetService) {}

  /** listPets: see PetService.listPets. */
  @Query(() => [Pet], {
    description: 'Lists animals in ascending id order, optionally by status.',
    // Cost for the query limits: the selection once per pet that may come back, at least one request.
    complexity: ({ args, childComplexity }) => databaseFieldCost(listSize(args.limit), childComplexity),
  })
  pets(@Args(() => ListPetsArgs) args: ListPetsArgs): Promise<Pet[]> {
    return this.petService.listPets(args);
  }

  /** getPet (deprecated): see PetService.getPet; null when no pet has the id. */
  @Query(() => Pet, {
    nullable: true,
    description: 'Returns one animal by identifier, or null when it does not exist.',
    deprecationReason: GET_PET_DEPRECATION.graphqlReason,
    // One lookup costs one request, as getPet does on REST.
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  pet(@Args(() => PetIdArgs) args: PetIdArgs, @Ctx('caller') caller: GraphqlContext['caller']): Promise<Pet | null> {
    return this.petService.getPet(args, caller);
  }

  /** createPet: see PetService.createPet; the Idempotency-Key comes with the caller. */
  @Mutation(() => Pet, {
    description: 'Adds a new animal. Send an Idempotency-Key header to make retries safe.',
    // One create costs one request, as createPet does on REST.
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  createPet(@Arg('input', () => NewPetInput) input: NewPetInput, @Ctx('caller') caller: GraphqlContext['caller']): Promise<Pet> {
    return this.petService.createPet(input, caller);
  }
}
