import { setTimeout as sleep } from 'node:timers/promises';
import { CommitOutcomeUnknownError } from '../database/database-deadline';
import { isDatabaseUnavailable } from '../database/database-errors';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { DeprecationTracker } from '../observability/deprecation.tracker';
import { validateInput } from '../validation/validate-input';
import type { Caller } from './caller';
import { decodePetCursor, encodePetCursor } from './pet-cursor';
import type { PetStatus } from './pet-status.enum';
import { type PetEvents, UNCONFIRMED_CREATE_CHECKS } from './pet-events';
import type { Pet } from './pet.entity';
import { ListPetsArgs, NewPetInput, PetIdArgs } from './pet.inputs';
import type { PetRepository } from './pet.repository';

/** What createPet did: the pet, and whether it is an Idempotency-Key replay (stored by an earlier request). */
export interface CreatedPet {
  pet: Pet;
  replayed: boolean;
}

/** One page of listPets (docs/pagination.md). */
export interface PetPage {
  /** Up to `limit` pets, in ascending id order. */
  pets: Pet[];
  /** The page size and the filter the page was read with (after defaults). */
  limit: number;
  status?: PetStatus;
  /** Whether a pet after the last one on this page matched when the page was read. */
  hasNextPage: boolean;
  /** The cursor of the next page (after this page's last pet), or null on the last page. */
  nextCursor: string | null;
  /** Whether the page was asked for with a cursor, i.e. is not the first. */
  hasPreviousPage: boolean;
  /** The cursor that continues the list after `pet`, one of this page's pets. */
  cursorAfter(pet: Pet): string;
}

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
   * @param events - told of each pet stored, after its commit (docs/subscriptions.md).
   */
  constructor(
    private readonly pets: PetRepository,
    private readonly idempotency: IdempotencyService,
    private readonly deprecations: DeprecationTracker,
    private readonly events: PetEvents,
  ) {}

  /**
   * listPets (spec "listPets"), a page at a time (docs/pagination.md).
   *
   * @param input - `{ limit?, status?, after? }` as the client sent them: `limit` an integer
   *   from 1 to 100 (default 20), `status` a PetStatus, `after` a cursor from a previous page
   *   of the list with the same `status`.
   * @returns the page: up to `limit` pets in ascending id order, and the next page's cursor.
   * @throws AppError BAD_USER_INPUT for an out-of-range limit, an unknown status, a cursor that
   *   is not one of ours or belongs to another filter, or an unknown property;
   *   DatabaseDeadlineError (503) when the database does not answer in time.
   */
  async listPets(input: unknown): Promise<PetPage> {
    const { limit, status, after } = await validateInput(ListPetsArgs, input);
    return this.page(limit, status ?? undefined, after ?? undefined);
  }

  /** Reads one more pet than the page holds, to know whether another page follows. A null status or cursor (GraphQL) is none. */
  private async page(limit: number, status: PetStatus | undefined, after: string | undefined): Promise<PetPage> {
    // Validated: a cursor of ours, for this status.
    const afterId = after === undefined ? 0 : decodePetCursor(after)!.afterId;
    const rows = await this.pets.list({ limit: limit + 1, status, afterId });
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
   * getPet (spec "getPet", deprecated): each call is counted against the caller's key
   * (docs/operations.md "Metrics").
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
   * createPet (spec "createPet"): with an Idempotency-Key, once per key (docs/idempotency.md).
   * Once the pet is committed, `events.created` announces it (docs/subscriptions.md); a replay
   * of an Idempotency-Key announces nothing, as it stores nothing. A create answered 504 (its
   * COMMIT never confirmed) is announced once the database shows it stored
   * ({@link UNCONFIRMED_CREATE_CHECKS}), and never if it was not.
   *
   * @param input - the NewPet fields `{ name, categoryId, status? }`; `status` defaults to `available`.
   * @param caller - who is calling, and the Idempotency-Key they sent, if any.
   * @returns the stored pet with its assigned id (the first one again, on a replay), and whether
   *   it is a replay.
   * @throws AppError BAD_USER_INPUT for a missing, unknown or invalid field; IDEMPOTENCY_KEY_IN_USE
   *   (409) or IDEMPOTENCY_KEY_REUSED (422); DatabaseDeadlineError (503, nothing stored) or
   *   CommitOutcomeUnknownError (504) when the database fails.
   */
  async createPet(input: unknown, caller: Caller): Promise<CreatedPet> {
    const { name, categoryId, status } = await validateInput(NewPetInput, input);
    const newPet = { name, categoryId, status };
    try {
      if (caller.idempotencyKey === undefined) {
        const pet = await this.pets.create(newPet); // committed when it resolves
        this.events.created(pet);
        return { pet, replayed: false };
      }
      // `once` runs the create only on a key's first use; a replay returns the stored pet.
      let stored = false;
      const pet = await this.idempotency.once(
        { apiKeyId: caller.apiKeyId, key: caller.idempotencyKey },
        newPet,
        async (manager) => {
          const created = await this.pets.create(newPet, manager);
          stored = true;
          return created;
        },
        (id, manager) => this.pets.findById(id, manager),
      );
      // `once` resolves after the COMMIT; had the transaction rolled back, it would have thrown.
      if (stored) this.events.created(pet);
      return { pet, replayed: !stored };
    } catch (error) {
      if (error instanceof CommitOutcomeUnknownError) void this.announceIfStored(error.written as Pet | undefined);
      throw error;
    }
  }

  /**
   * Settles a create whose COMMIT was never confirmed: looks `pet` up on the primary until the
   * database answers, and announces it if it is there. Runs after the request was answered;
   * never throws.
   */
  private async announceIfStored(pet: Pet | undefined): Promise<void> {
    if (pet?.id === undefined) return;
    const giveUpAt = performance.now() + UNCONFIRMED_CREATE_CHECKS.maxMs;
    for (;;) {
      try {
        if (await this.pets.findOnPrimary(pet.id)) this.events.created(pet);
        return;
      } catch (error) {
        if (!isDatabaseUnavailable(error) || performance.now() > giveUpAt) return;
        await sleep(UNCONFIRMED_CREATE_CHECKS.intervalMs, undefined, { ref: false });
      }
    }
  }
}
