/** Who calls a pet operation, as the guard established it, so operations never read a header (docs/architecture.md "Layers"). */
export interface Caller {
  readonly apiKeyId: number;
  /** Already checked (idempotency/idempotency-key.ts). */
  readonly idempotencyKey?: string;
}
