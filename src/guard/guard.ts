import type { ApiKeyService } from '../auth/api-key.service';
import type { DatabaseBudget } from '../database/database-deadline';
import { AppError } from '../errors/error-catalogue';
import { parseIdempotencyKey } from '../idempotency/idempotency-key';
import type { Caller } from '../pets/caller';
import type { RateLimitStatus, RateLimitedClient, RateLimiter } from './rate-limiter';

/** What the guard has established of one request or WebSocket connection, as it goes. */
export interface GuardState {
  /** Also set when a charge to it was refused. */
  apiKeyId?: number;
  caller?: Caller;
  rateLimit?: RateLimitStatus;
}

/** What the guard reads of a request or connection: nothing of its transport. */
export interface Admission {
  /** TRUST_PROXY applied. */
  address: string;
  /** As sent: a header, or a `connection_init` entry. */
  authorization: unknown;
  idempotencyKey?: string | string[];
  units: number;
  /** The request's database budget, started at its arrival: the key lookup and every call after share it (Caller.budget). */
  budget?: DatabaseBudget;
}

/** The one guard of both surfaces and of WebSocket connections (docs/security.md "Limits"). */
export interface Guard {
  /**
   * Admits a caller: a key this process does not know pays 1 unit on its address before any
   * lookup, then the key pays `units`. Writes `state` as it goes, so a refusal still tells where
   * the rate limit stands. Throws UNAUTHENTICATED, TOO_MANY_REQUESTS, SERVICE_UNAVAILABLE, BAD_USER_INPUT.
   */
  admit(input: Admission, state: GuardState): Promise<Caller>;
  /** Charges an admitted caller's key `units` more, all or none. Throws TOO_MANY_REQUESTS, SERVICE_UNAVAILABLE. */
  spend(state: GuardState, units: number): Promise<void>;
}

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;
const REALM = 'Bearer realm="pet-store"';

function unauthenticated(message: string, error?: 'invalid_token'): AppError {
  const challenge = error ? `${REALM}, error="${error}"` : REALM;
  return new AppError('UNAUTHENTICATED', message, { 'WWW-Authenticate': challenge });
}

const invalid = () => unauthenticated('Invalid or revoked API key.', 'invalid_token');

/** The guard over `apiKeys` (its cache included) and `limiter`. */
export function createGuard(apiKeys: ApiKeyService, limiter: RateLimiter): Guard {
  const charge = async (state: GuardState, client: RateLimitedClient, units: number) => {
    const { charged, status } = await limiter.charge(client, units);
    state.rateLimit = status;
    if (charged) return;
    const retryAfter = String(Math.max(1, status.resetSeconds));
    throw new AppError('TOO_MANY_REQUESTS', `Rate limit reached: retry in ${retryAfter} s.`, { 'Retry-After': retryAfter });
  };

  /** A first lookup under way is waited for, so a burst on a new key is charged to the key, not the address. */
  const recognise = async (authorization: unknown) => {
    if (!authorization) return { failure: unauthenticated('Missing API key: send Authorization: Bearer <API_KEY>.') };
    const token = typeof authorization === 'string' ? BEARER.exec(authorization)?.[1] : undefined;
    if (token === undefined) return { failure: unauthenticated('Malformed Authorization header: expected Bearer <API_KEY>.', 'invalid_token') };
    let recognised = apiKeys.recognise(token);
    const underWay = recognised.state === 'unknown' ? apiKeys.lookupUnderWay(token) : undefined;
    if (underWay) {
      await underWay.catch(() => undefined);
      recognised = apiKeys.recognise(token);
    }
    if (recognised.state === 'malformed' || recognised.state === 'refused') return { failure: invalid() };
    if (recognised.state === 'trusted') return { token, knownId: recognised.apiKey.id, trusted: true };
    return { token, knownId: recognised.state === 'known' ? recognised.apiKeyId : undefined, trusted: false };
  };

  return {
    async admit({ address, authorization, idempotencyKey, units, budget }, state) {
      const { failure, token, knownId, trusted } = await recognise(authorization);
      if (knownId === undefined) await charge(state, { address }, 1);
      if (failure) throw failure;
      // A trusted key is not looked up (nor hashed) again.
      const apiKeyId = trusted ? knownId : (await apiKeys.findActive(token, budget))?.id;
      state.apiKeyId = apiKeyId;
      if (apiKeyId === undefined) throw invalid();
      await charge(state, { apiKeyId }, units);
      const checked = parseIdempotencyKey(idempotencyKey);
      state.caller = { apiKeyId, ...(checked !== undefined && { idempotencyKey: checked }), ...(budget && { budget }) };
      return state.caller;
    },
    async spend(state, units) {
      if (state.apiKeyId === undefined) throw new Error('spend runs after admit has admitted the caller');
      if (units > 0) await charge(state, { apiKeyId: state.apiKeyId }, units);
    },
  };
}
