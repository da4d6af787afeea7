import type { ApiKeyService } from '../auth/api-key.service';
import { AppError } from '../errors/error-catalogue';
import { parseIdempotencyKey } from '../idempotency/idempotency-key';
import type { Caller } from '../pets/caller';
import type { RateLimitStatus, RateLimitedClient, RateLimiter } from './rate-limiter';

/** What the guard has established of one request or WebSocket connection, as it goes. */
export interface GuardState {
  /** Id of the API key that authenticated it (or that it was charged to before a refusal). */
  apiKeyId?: number;
  /** Who is calling, once admitted. */
  caller?: Caller;
  /** Where its last rate-limit counter stands, for the RateLimit header fields and `extensions.rateLimit`. */
  rateLimit?: RateLimitStatus;
}

/** What the guard reads of a request or connection: nothing of its transport. */
export interface Admission {
  /** The client's address, TRUST_PROXY applied. */
  address: string;
  /** The `Authorization` value as sent (a header, or a `connection_init` entry). */
  authorization: unknown;
  /** The `Idempotency-Key` header as parsed, if the transport has one. */
  idempotencyKey?: string | string[];
  /** What admission costs the key: 1 for a request, SUBSCRIPTION_LIMITS.connectionCost for a connection. */
  units: number;
}

/** The one guard of both surfaces and of WebSocket connections (docs/security.md "Limits"). */
export interface Guard {
  /**
   * Admits a request or connection, in this order: the address limit (a caller without a key this
   * process already knows pays 1 unit on its address, before any lookup), the key (looked up when
   * needed), the key limit (`units`), the caller (its checked Idempotency-Key). Writes `state` as
   * it goes, so a refusal still tells where the rate limit stands.
   *
   * @returns the caller, also in `state.caller`.
   * @throws AppError UNAUTHENTICATED (401, `WWW-Authenticate` per RFC 6750), TOO_MANY_REQUESTS
   *   (429, Retry-After), SERVICE_UNAVAILABLE (the counters cannot be read), BAD_USER_INPUT (a
   *   malformed Idempotency-Key).
   */
  admit(input: Admission, state: GuardState): Promise<Caller>;
  /**
   * Charges an admitted caller's key `units` more (a GraphQL operation's calls, a subscription),
   * all or none.
   *
   * @throws AppError TOO_MANY_REQUESTS when fewer are left, SERVICE_UNAVAILABLE.
   */
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

/**
 * The guard over `apiKeys` (its cache included) and `limiter`.
 *
 * @param apiKeys - where keys are checked.
 * @param limiter - the rate limiter's counters.
 */
export function createGuard(apiKeys: ApiKeyService, limiter: RateLimiter): Guard {
  const charge = async (state: GuardState, client: RateLimitedClient, units: number) => {
    const { charged, status } = await limiter.charge(client, units);
    state.rateLimit = status;
    if (charged) return;
    const retryAfter = String(Math.max(1, status.resetSeconds));
    throw new AppError('TOO_MANY_REQUESTS', `Rate limit reached: retry in ${retryAfter} s.`, { 'Retry-After': retryAfter });
  };

  /** The key in `authorization` and what this process knows of it; a first lookup under way is waited for, so its burst is charged to the key. */
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
    const knownId = recognised.state === 'trusted' ? recognised.apiKey.id : recognised.state === 'known' ? recognised.apiKeyId : undefined;
    return { token, knownId };
  };

  return {
    async admit({ address, authorization, idempotencyKey, units }, state) {
      const { failure, token, knownId } = await recognise(authorization);
      if (knownId === undefined) await charge(state, { address }, 1);
      if (failure) throw failure;
      const apiKeyId = (await apiKeys.findActive(token))?.id;
      state.apiKeyId = apiKeyId;
      if (apiKeyId === undefined) throw invalid();
      await charge(state, { apiKeyId }, units);
      const checked = parseIdempotencyKey(idempotencyKey);
      state.caller = { apiKeyId, ...(checked !== undefined && { idempotencyKey: checked }) };
      return state.caller;
    },
    async spend(state, units) {
      if (state.apiKeyId === undefined) throw new Error('spend runs after admit has admitted the caller');
      if (units > 0) await charge(state, { apiKeyId: state.apiKeyId }, units);
    },
  };
}
