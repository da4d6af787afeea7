/**
 * WebSocket close codes the server sends (docs/subscriptions.md "Close codes"). graphql-ws's own: 4400 bad
 * message, 4403 Forbidden, 4408 `connection_init` timeout, 4409 duplicate subscription id,
 * 4429 a second `connection_init`.
 */
export const SUBSCRIPTION_CLOSE = Object.freeze({
  /** Missing, malformed, unknown or revoked API key (graphql-ws `CloseCode.Forbidden`). */
  forbidden: { code: 4403, reason: 'Forbidden: send {"Authorization": "Bearer <API_KEY>"} in connection_init with a valid key.' },
  revoked: { code: 4403, reason: 'Forbidden: the API key was revoked.' },
  /** Too many connections for the key, or the rate limit is spent. */
  tooManyConnections: { code: 4429, reason: 'Too many requests: too many open connections for this API key.' },
  /** The database or the rate limit's store cannot answer now: reconnect shortly (RFC 6455 1013 Try Again Later). */
  unavailable: { code: 1013, reason: 'Service unavailable: retry shortly.' },
  /**
   * More than {@link SUBSCRIPTION_LIMITS}.maxBufferedBytes wait for a peer that does not read them
   * (RFC 6455 1008 Policy Violation: the client's fault, so not 1013).
   */
  slowConsumer: { code: 1008, reason: 'Policy violation: the client does not read its events; more than 1 MiB was waiting.' },
  /** The server is shutting down (RFC 6455 1001 Going Away). */
  goingAway: { code: 1001, reason: 'Going away: the server is shutting down.' },
});
