import { FOLLOWER_LIMITS } from '../limits';

/** WebSocket close codes the server sends, besides graphql-ws's own (docs/subscriptions.md "Close codes"). */
export const SUBSCRIPTION_CLOSE = Object.freeze({
  forbidden: { code: 4403, reason: 'Forbidden: send {"Authorization": "Bearer <API_KEY>"} in connection_init with a valid key.' },
  revoked: { code: 4403, reason: 'Forbidden: the API key was revoked or has expired.' },
  /** A publishable key used from an origin it does not list. */
  originRefused: { code: 4403, reason: 'Forbidden: this API key may not be used from this origin.' },
  /** Too many connections for the key; a spent rate limit closes with the same code and the limit's own message. */
  tooManyConnections: { code: 4429, reason: 'Too many requests: too many open connections for this API key.' },
  unavailable: { code: 1013, reason: 'Service unavailable: retry shortly.' },
  /** 1008, not 1013: the client's fault (FOLLOWER_LIMITS: the pacing of every stream). */
  slowConsumer: {
    code: 1008,
    reason: `Policy violation: the client read none of its waiting events for ${FOLLOWER_LIMITS.stalledReaderMs / 1000} s; resume from your cursor.`,
  },
  goingAway: { code: 1001, reason: 'Going away: the server is shutting down.' },
});
