import type { Pet } from './pet.entity';

/**
 * The port through which the pet operations announce what happened (docs/subscriptions.md):
 * PetService calls it, transport-free; the in-memory or Redis transport behind it lives in
 * `events/`, and the GraphQL subscription `petCreated` listens to it.
 */
export interface PetEvents {
  /**
   * A pet was stored: called once per stored pet, after its transaction committed; never for a
   * create that failed or rolled back, nor for an Idempotency-Key replay. Must not throw, nor
   * wait: delivery is best effort and never fails the create.
   *
   * @param pet - the stored pet `{ id, name, categoryId, status }`, as the create returns it.
   */
  created(pet: Pet): void;
}

/**
 * How a create answered 504 (its COMMIT never confirmed) is settled: its row is looked up on the
 * primary every `intervalMs` while the database cannot answer, for at most `maxMs`; found, the
 * pet is announced then (docs/subscriptions.md).
 */
export const UNCONFIRMED_CREATE_CHECKS = Object.freeze({ intervalMs: 1_000, maxMs: 10 * 60_000 });
