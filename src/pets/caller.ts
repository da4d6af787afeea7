import type { DatabaseBudget } from '../database/database-deadline';

/** Who calls a pet operation, as the guard established it, so operations never read a header (docs/architecture.md "Layers"). */
export interface Caller {
  readonly apiKeyId: number;
  /** Already checked (idempotency/idempotency-key.ts). */
  readonly idempotencyKey?: string;
  /** The request's one database budget, from its arrival; absent on a WebSocket, whose calls each have their own deadline. */
  readonly budget?: DatabaseBudget;
}
