/**
 * HTTP limits of the service (docs/security.md "Limits"), defined once. Body limits answer 413
 * PAYLOAD_TOO_LARGE; the timeouts close connections that hold a request open.
 */
export const HTTP_LIMITS = Object.freeze({
  /** Largest REST request body: a NewPet is under 1 KiB. */
  restBodyBytes: 16 * 1024,
  /** Largest GraphQL request body: room for large documents within the token limit. */
  graphqlBodyBytes: 64 * 1024,
  /** A request must be received whole within this time (ms), else 408. */
  requestTimeoutMs: 10_000,
  /**
   * Idle keep-alive connections are closed after this time (ms), announced as
   * `Keep-Alive: timeout=5`; Node closes them one second later (its fixed margin, so that a
   * client honouring the announcement never reuses a connection as it closes).
   */
  keepAliveTimeoutMs: 5_000,
  /**
   * How often Node checks open connections against the request timeout (ms): its default, 30 s,
   * let a stalled connection live up to 40 s instead of 10. This is the timeout's precision.
   */
  timeoutCheckIntervalMs: 1_000,
  /** Largest request head Node accepts (bytes), else 431. */
  maxHeaderBytes: 16 * 1024,
});
