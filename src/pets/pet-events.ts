import type { Pet } from './pet.entity';

/**
 * The port through which PetService announces stored pets; `events/` carries them to `petCreated` (docs/subscriptions.md).
 * The contract, stated only here: `created` is called once per committed pet, after its COMMIT; never for a create refused
 * or rolled back, nor for an Idempotency-Key replay (it stores nothing). A create answered 504 with an Idempotency-Key is
 * announced once if later found stored (its id is known before COMMIT; UNCONFIRMED_CREATE_CHECKS in src/limits.ts), else
 * never; one without a key is never announced, even if stored: its one INSERT was never answered, so its id is unknown.
 * Best effort: `created` neither throws nor waits, never failing the create.
 */
export interface PetEvents {
  /** `pet` as the create returns it; see PetEvents. */
  created(pet: Pet): void;
}
