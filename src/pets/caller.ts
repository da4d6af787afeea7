/**
 * Who calls a pet operation, as the guard established it for either surface (docs/architecture.md
 * "Layers"): free of any transport, so the operations never read a header.
 */
export interface Caller {
  /** Id of the API key that authenticated the request. */
  readonly apiKeyId: number;
  /** The request's Idempotency-Key, already checked (see idempotency/idempotency-key.ts); absent when none was sent. */
  readonly idempotencyKey?: string;
}
