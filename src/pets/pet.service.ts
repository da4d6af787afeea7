import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { DeprecationTracker } from '../observability/deprecation.tracker';
import { validateInput } from '../validation/validate-input';
import type { Caller } from './caller';
import { decodePetCursor, encodePetCursor } from './pet-cursor';
import type { PetStatus } from './pet-status.enum';
import type { PetEvents } from './pet-events';
import type { Pet } from './pet.entity';
import { ListPetsArgs, NewPetInput, PetIdArgs } from './pet.inputs';
import type { PetRepository } from './pet.repository';

/** What createPet did: the pet, and whether it is an Idempotency-Key replay (stored by an earlier request). */
export interface CreatedPet {
  pet: Pet;
  replayed: boolean;
}

/** One page of listPets (docs/pagination.md): up to `limit` pets in ascending id order; `limit` and `status` after defaults. */
export interface PetPage {
  pets: Pet[];
  limit: number;
  status?: PetStatus;
  hasNextPage: boolean;
  /** Null on the last page. */
  nextCursor: string | null;
  /** True when the page was asked for with a cursor. */
  hasPreviousPage: boolean;
  cursorAfter(pet: Pet): string;
}

/** The pet operations (spec "Endpoints") both surfaces call, with the client's input unvalidated; knows no GraphQL or HTTP. */
export class PetService {
  constructor(
    private readonly pets: PetRepository,
    private readonly idempotency: IdempotencyService,
    private readonly deprecations: DeprecationTracker,
    private readonly events: PetEvents,
  ) {}

  /** listPets (spec "listPets"), `input` as ListPetsArgs; throws AppError BAD_USER_INPUT, DatabaseDeadlineError (503). */
  async listPets(input: unknown, caller: Caller): Promise<PetPage> {
    const { limit, status, after } = await validateInput(ListPetsArgs, input);
    return this.page(limit, status ?? undefined, after ?? undefined, caller);
  }

  /** Reads one pet more than the page holds, to know whether another page follows. */
  private async page(limit: number, status: PetStatus | undefined, after: string | undefined, { budget }: Caller): Promise<PetPage> {
    // Validated, so decodable.
    const afterId = after === undefined ? 0 : decodePetCursor(after)!.afterId;
    const rows = await this.pets.list({ limit: limit + 1, status, afterId, budget });
    const pets = rows.slice(0, limit);
    const hasNextPage = rows.length > limit;
    const cursorAfter = (pet: Pet) => encodePetCursor({ status, afterId: pet.id });
    return {
      pets,
      limit,
      status,
      hasNextPage,
      nextCursor: hasNextPage ? cursorAfter(pets[pets.length - 1]) : null,
      hasPreviousPage: after !== undefined,
      cursorAfter,
    };
  }

  /**
   * getPet (spec "getPet"), deprecated, so counted per key (docs/operations.md "Metrics"), then {@link findPet}.
   * @throws AppError BAD_USER_INPUT; DatabaseDeadlineError (503).
   */
  async getPet(input: unknown, caller: Caller): Promise<Pet | null> {
    this.deprecations.record('getPet', caller.apiKeyId);
    return this.findPet(input, caller);
  }

  /**
   * One pet by id, with getPet's rules but not counted as a getPet call: what GraphQL's `node(id:)` reads (docs/graphql.md "Relay").
   * @param input - as PetIdArgs: `{ id }`, a decimal string of a positive integer up to 2^53-1.
   * @returns the pet, or null when none has that id.
   * @throws AppError BAD_USER_INPUT when `id` is missing or not such a string; DatabaseDeadlineError (503).
   */
  async findPet(input: unknown, caller: Caller): Promise<Pet | null> {
    const { id } = await validateInput(PetIdArgs, input);
    return this.pets.findById(Number(id), { budget: caller.budget });
  }

  /**
   * createPet (spec "createPet"), once per Idempotency-Key (docs/idempotency.md), `input` as NewPetInput. A stored pet
   * enters the change feed after its COMMIT (docs/events.md), whatever the answer; the feed is told to look now.
   * @throws AppError BAD_USER_INPUT, IDEMPOTENCY_KEY_IN_USE (409), IDEMPOTENCY_KEY_REUSED (422); DatabaseDeadlineError (503); CommitOutcomeUnknownError (504).
   */
  async createPet(input: unknown, caller: Caller): Promise<CreatedPet> {
    const { name, categoryId, status } = await validateInput(NewPetInput, input);
    const newPet = { name, categoryId, status };
    try {
      // One autocommit INSERT, committed when it resolves.
      if (caller.idempotencyKey === undefined) return { pet: await this.pets.create(newPet, { budget: caller.budget }), replayed: false };
      let stored = false;
      const pet = await this.idempotency.once(
        { apiKeyId: caller.apiKeyId, key: caller.idempotencyKey },
        newPet,
        async (manager) => {
          const created = await this.pets.create(newPet, { manager });
          stored = true;
          return created;
        },
        (id, manager) => this.pets.findById(id, { manager }),
        caller.budget,
      );
      // `once` resolves only after the COMMIT, so `stored` means committed.
      return { pet, replayed: !stored };
    } finally {
      this.events.stored();
    }
  }
}
