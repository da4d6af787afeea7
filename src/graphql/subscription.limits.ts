import { HTTP_LIMITS } from '../http/http-limits';

/**
 * Limits of GraphQL subscriptions over WebSocket (docs/subscriptions.md "Limits"), defined once. The
 * document limits (depth, aliases, directives, tokens, cost) are the HTTP ones (query-limits.ts).
 */
export const SUBSCRIPTION_LIMITS = Object.freeze({
  /** Subscriptions running at once on one connection; one more is refused with TOO_MANY_REQUESTS. */
  maxSubscriptionsPerConnection: 10,
  /** Open connections of one API key on one instance; one more is closed with 4429. */
  maxConnectionsPerKey: 20,
  /** Rate-limit units (requests) a connection costs when it opens; a subscription costs 1 more (rateLimitUnits in guard/rate-limiter.ts). */
  connectionCost: 1,
  /** The client must send `connection_init` within this time (ms), else the socket is closed with 4408. */
  connectionInitWaitMs: 3_000,
  /**
   * Upgraded sockets of one client address (TRUST_PROXY applied) not yet authenticated; one more
   * upgrade is refused with 429. As many as one key may hold open: an honest client's socket
   * waits here for one round trip only.
   */
  maxPendingConnectionsPerAddress: 20,
  /**
   * A ping with a fresh random payload is sent every this many ms; a peer that has not echoed the
   * previous one's payload by the next one is dropped (RFC 6455 §5.5.3), so at most 2 × 12 s after
   * it went silent. Unsolicited pongs do not count.
   */
  keepAliveMs: 12_000,
  /**
   * Bytes that may wait for a peer that does not read them; one more message closes its socket
   * with 1008. About 600 events of the largest selection (1.7 KiB) or 12,000 of a small one,
   * on top of what the kernel's socket buffers hold; with the connections of a key, at most
   * 20 MiB per key on one instance.
   */
  maxBufferedBytes: 1024 * 1024,
  /** Largest message a client may send (bytes), as the largest GraphQL HTTP body; a larger one closes the socket (1009). */
  maxMessageBytes: HTTP_LIMITS.graphqlBodyBytes,
  /** At shutdown, how long (ms) a peer may take to answer the 1001 close before its socket is cut. */
  closeHandshakeMs: 1_000,
  /** How often (ms) open connections re-check their key when API_KEY_CACHE_SECONDS is 0. */
  minKeyRecheckMs: 1_000,
});

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
