import { Arg, Args, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { DeprecationTracker } from '../operations/deprecation.tracker';
import { type RequestContext, idempotencyKeyOf } from '../idempotency/request-context';
import { databaseFieldCost } from '../graphql/query-limits';
import { validateInput } from '../validation/validate-input';
import { Pet } from './pet.entity';
import { ListPetsArgs, NewPetInput, PetIdArgs } from './pet.inputs';
import { GET_PET_DEPRECATION } from './get-pet.deprecation';
import { PET_LIMITS } from './pet.limits';
import { PetService } from './pet.service';

/** How many pets a `limit` argument can return, for pricing: out-of-range values are refused later anyway. */
function listSize(limit: unknown): number {
  return Number.isInteger(limit) ? Math.min(Math.max(limit as number, PET_LIMITS.listMin), PET_LIMITS.listMax) : PET_LIMITS.listMax;
}

/**
 * The one code path for pets: GraphQL calls these methods through type-graphql, and the
 * REST controller calls the same methods directly. Each method validates its input against
 * the input class's rules, so both surfaces apply the same rules.
 */
@Resolver(() => Pet)
export class PetResolver {
  constructor(
    private readonly petService: PetService,
    private readonly idempotency: IdempotencyService,
    private readonly deprecations: DeprecationTracker,
  ) {}

  /**
   * listPets (spec "listPets").
   *
   * @param args - `limit` (1-100, default 20) and optional `status`.
   * @returns up to `limit` pets in ascending id order.
   * @throws AppError BAD_USER_INPUT for an out-of-range limit or an unknown status.
   */
  @Query(() => [Pet], {
    description: 'Lists animals in ascending id order, optionally by status.',
    // Cost for the query limits: the selection once per pet that may come back, at least one request.
    complexity: ({ args, childComplexity }) => databaseFieldCost(listSize(args.limit), childComplexity),
  })
  async pets(@Args(() => ListPetsArgs) args: ListPetsArgs): Promise<Pet[]> {
    const { limit, status } = await validateInput(ListPetsArgs, args);
    return this.petService.list({ limit, status });
  }

  /**
   * getPet (spec "getPet", deprecated).
   *
   * @param args - `id`, a positive integer as a decimal string.
   * @param context - the HTTP request; the call is counted per API key (README "Operations").
   * @returns the pet, or null when it does not exist (REST turns null into 404).
   * @throws AppError BAD_USER_INPUT for an id that is not a positive safe integer.
   */
  @Query(() => Pet, {
    nullable: true,
    description: 'Returns one animal by identifier, or null when it does not exist.',
    deprecationReason: GET_PET_DEPRECATION.graphqlReason,
    // One lookup costs one request, as getPet does on REST.
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  async pet(@Args(() => PetIdArgs) args: PetIdArgs, @Ctx() context: RequestContext): Promise<Pet | null> {
    if (context.request.apiKeyId !== undefined) this.deprecations.record('getPet', context.request.apiKeyId);
    const { id } = await validateInput(PetIdArgs, args);
    return this.petService.findById(Number(id));
  }

  /**
   * createPet (spec "createPet").
   *
   * @param input - the NewPet fields; `status` defaults to `available`.
   * @param context - the HTTP request; an `Idempotency-Key` header makes the create idempotent.
   * @returns the stored pet with its assigned id (the first one again, on a replay).
   * @throws AppError BAD_USER_INPUT for missing, unknown or invalid fields or a malformed
   *   Idempotency-Key; IDEMPOTENCY_KEY_IN_USE (409) or IDEMPOTENCY_KEY_REUSED (422).
   */
  @Mutation(() => Pet, {
    description: 'Adds a new animal. Send an Idempotency-Key header to make retries safe.',
    // One create costs one request, as createPet does on REST.
    complexity: ({ childComplexity }) => databaseFieldCost(1, childComplexity),
  })
  async createPet(@Arg('input', () => NewPetInput) input: NewPetInput, @Ctx() context: RequestContext): Promise<Pet> {
    const { name, categoryId, status } = await validateInput(NewPetInput, input);
    const key = idempotencyKeyOf(context);
    if (key === undefined || context.request.apiKeyId === undefined) return this.petService.create({ name, categoryId, status });
    return this.idempotency.once(
      { apiKeyId: context.request.apiKeyId, key },
      { name, categoryId, status },
      (manager) => this.petService.create({ name, categoryId, status }, manager),
      (id, manager) => this.petService.findById(id, manager),
    );
  }
}
