/**
 * Limits of idempotent creates, defined once (docs/idempotency.md, docs/security.md "Limits"): how
 * long keys are kept, when an unfinished request counts as abandoned, and what a key may be.
 */
export const IDEMPOTENCY_LIMITS = Object.freeze({
  /** A key can be replayed for 24 hours; then it is purged and may be used again. */
  retentionMs: 24 * 60 * 60 * 1000,
  /** A request still unfinished after this long (twice the request timeout) was cut off. */
  abandonedAfterMs: 20_000,
  /** Longest Idempotency-Key accepted. */
  maxKeyLength: 255,
  /** What an Idempotency-Key is made of: printable ASCII, spaces allowed except first. */
  keyPattern: '^[\\x21-\\x7e][\\x20-\\x7e]*$',
});
