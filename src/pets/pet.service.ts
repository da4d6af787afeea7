import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { DeprecationTracker } from '../operations/deprecation.tracker';
import { validateInput } from '../validation/validate-input';
import type { Caller } from './caller';
import type { Pet } from './pet.entity';
import { ListPetsArgs, NewPetInput, PetIdArgs } from './pet.inputs';
import type { PetRepository } from './pet.repository';

/**
 * The pet operations (spec "Endpoints"), the one code path both surfaces call: the GraphQL
 * resolver and the REST controller hand over what the client sent, unvalidated, and who is
 * calling; each operation validates the input against its input class's rules, then does the
 * work through the repository. Knows neither GraphQL nor HTTP: no header, request or reply.
 */
export class PetService {
  /**
   * @param pets - the pet table.
   * @param idempotency - runs a create once per Idempotency-Key.
   * @param deprecations - counts calls of deprecated operations per API key.
   */
  constructor(
    private readonly pets: PetRepository,
    private readonly idempotency: IdempotencyService,
    private readonly deprecations: DeprecationTracker,
  ) {}

  /**
   * listPets (spec "listPets").
   *
   * @param input - `{ limit?, status? }` as the client sent them: `limit` an integer from 1 to
   *   100 (default 20), `status` a PetStatus.
   * @returns up to `limit` pets in ascending id order.
   * @throws AppError BAD_USER_INPUT for an out-of-range limit, an unknown status or an unknown
   *   property; DatabaseDeadlineError (503) when the database does not answer in time.
   */
  async listPets(input: unknown): Promise<Pet[]> {
    const { limit, status } = await validateInput(ListPetsArgs, input);
    return this.pets.list({ limit, status });
  }

  /**
   * getPet (spec "getPet", deprecated): each call is counted against the caller's key
   * (README "Operations").
   *
   * @param input - `{ id }`, a positive integer written as a decimal string.
   * @param caller - who is calling.
   * @returns the pet, or null when none has that id (REST answers 404).
   * @throws AppError BAD_USER_INPUT for an id that is not a positive safe integer;
   *   DatabaseDeadlineError (503) when the database does not answer in time.
   */
  async getPet(input: unknown, caller: Caller): Promise<Pet | null> {
    this.deprecations.record('getPet', caller.apiKeyId);
    const { id } = await validateInput(PetIdArgs, input);
    return this.pets.findById(Number(id));
  }

  /**
   * createPet (spec "createPet"): with an Idempotency-Key, once per key (README "Idempotent creates").
   *
   * @param input - the NewPet fields `{ name, categoryId, status? }`; `status` defaults to `available`.
   * @param caller - who is calling, and the Idempotency-Key they sent, if any.
   * @returns the stored pet with its assigned id (the first one again, on a replay).
   * @throws AppError BAD_USER_INPUT for a missing, unknown or invalid field; IDEMPOTENCY_KEY_IN_USE
   *   (409) or IDEMPOTENCY_KEY_REUSED (422); DatabaseDeadlineError (503, nothing stored) or
   *   CommitOutcomeUnknownError (504) when the database fails.
   */
  async createPet(input: unknown, caller: Caller): Promise<Pet> {
    const { name, categoryId, status } = await validateInput(NewPetInput, input);
    const newPet = { name, categoryId, status };
    if (caller.idempotencyKey === undefined) return this.pets.create(newPet);
    return this.idempotency.once(
      { apiKeyId: caller.apiKeyId, key: caller.idempotencyKey },
      newPet,
      (manager) => this.pets.create(newPet, manager),
      (id, manager) => this.pets.findById(id, manager),
    );
  }
}
