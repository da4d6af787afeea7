import type { Pet } from './pet.entity';

/**
 * The port through which PetService announces stored pets; `events/` carries them to `petCreated` (docs/subscriptions.md).
 * The contract, stated only here: `created` is called once per committed pet, after its COMMIT; never for a create refused
 * or rolled back, nor for an Idempotency-Key replay (it stores nothing). A create answered 504 is announced once if later
 * found stored (UNCONFIRMED_CREATE_CHECKS in src/limits.ts), else never. Best effort: `created` neither throws nor waits, never failing the create.
 */
export interface PetEvents {
  /** `pet` as the create returns it; see PetEvents. */
  created(pet: Pet): void;
}
