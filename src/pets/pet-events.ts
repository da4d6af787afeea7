import type { Pet } from './pet.entity';

/**
 * The port through which PetService announces stored pets; `events/` carries them to `petCreated` (docs/subscriptions.md).
 * The contract, stated only here: `created` is called once per committed pet, after its COMMIT; never for a create refused
 * or rolled back, nor for an Idempotency-Key replay (it stores nothing). A create answered 504 is announced once if later
 * found stored ({@link UNCONFIRMED_CREATE_CHECKS}), else never. Best effort: `created` neither throws nor waits, never failing the create.
 */
export interface PetEvents {
  /** `pet` as the create returns it; see PetEvents. */
  created(pet: Pet): void;
}

/** How a create answered 504 is settled: its row is looked up on the primary every `intervalMs` while the database is unavailable, for at most `maxMs`. */
export const UNCONFIRMED_CREATE_CHECKS = Object.freeze({ intervalMs: 1_000, maxMs: 10 * 60_000 });
