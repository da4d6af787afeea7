import type { Scope } from '../auth/api-key-policy';
import { type Credential, hasExpired } from '../auth/api-key.authenticator';
import type { ApiKeyService } from '../auth/api-key.service';
import type { DatabaseBudget } from '../database/database-deadline';
import { AppError } from '../errors/error-catalogue';
import { parseIdempotencyKey } from '../idempotency/idempotency-key';
import { API_KEY_LIMITS } from '../limits';
import type { Caller } from '../pets/caller';
import type { RateLimitCounter, RateLimitStatus, RateLimiter } from './rate-limiter';

/** What the guard has established of one request or WebSocket connection, as it goes. */
export interface GuardState {
  /** Also set when a charge to it was refused. */
  apiKeyId?: number;
  /** The presented key, once found (expired ones too, for `API-Key-Expires`). */
  credential?: Credential;
  caller?: Caller;
  rateLimit?: RateLimitStatus;
  /** Where an admitted caller spends: its key's counters, for the address it was admitted from. */
  counters?: readonly RateLimitCounter[];
  /** Units charged to `counters` so far, at admission and after: what {@link Guard.giveBack} returns. */
  spent?: number;
  /** Set when the key does not allow the request's `Origin`: the answer must carry no CORS grant. */
  originRefused?: boolean;
}

/** What the guard reads of a request or connection: nothing of its transport. */
export interface Admission {
  /** TRUST_PROXY applied. */
  address: string;
  /** As sent: a header, or a `connection_init` entry. */
  authorization: unknown;
  /** The `Origin` header, when the client sent one (browsers do). */
  origin?: string;
  idempotencyKey?: string | string[];
  units: number;
  /** The request's database budget, started at its arrival: the key lookup and every call after share it (Caller.budget). */
  budget?: DatabaseBudget;
}

/** The one guard of both surfaces and of WebSocket connections (docs/security.md "Limits", docs/api-keys.md). */
export interface Guard {
  /**
   * Admits a caller: a key this process does not know pays 1 unit on its address before any
   * lookup, then the key pays `units`. Writes `state` as it goes, so a refusal still tells where
   * the rate limit stands. Throws UNAUTHENTICATED (also for an expired key), FORBIDDEN (origin),
   * TOO_MANY_REQUESTS, SERVICE_UNAVAILABLE, BAD_USER_INPUT.
   */
  admit(input: Admission, state: GuardState): Promise<Caller>;
  /**
   * Refuses, with FORBIDDEN and RFC 6750's `insufficient_scope`, an admitted caller whose key lacks one of `needed`;
   * `undefined` stands for an operation the scope table lacks, which no key may run.
   */
  authorize(state: GuardState, needed: Iterable<Scope | undefined>): void;
  /** Charges an admitted caller's key `units` more, all or none. Throws TOO_MANY_REQUESTS, SERVICE_UNAVAILABLE. */
  spend(state: GuardState, units: number): Promise<void>;
  /**
   * Charges 1 unit to `address`'s counter, the one requests without a valid key spend (RATE_LIMIT_UNAUTHENTICATED_MAX):
   * for operations open to anyone. Writes `state.rateLimit`. Throws TOO_MANY_REQUESTS, SERVICE_UNAVAILABLE.
   */
  chargeAddress(address: string, state: GuardState): Promise<void>;
  /**
   * Gives an admitted caller's key back every unit its request spent, for an answer that is not charged: a 304 Not
   * Modified (RFC 9110 §15.4.5; docs/security.md "Limits"). Writes `state.rateLimit` as if nothing had been charged.
   * What a key this process had not seen cost its address (the lookup) stays spent. Throws the rate-limit store's error.
   */
  giveBack(state: GuardState): Promise<void>;
}

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;
const REALM = 'Bearer realm="pet-store"';

function unauthenticated(message: string, error?: 'invalid_token'): AppError {
  const challenge = error ? `${REALM}, error="${error}"` : REALM;
  return new AppError('UNAUTHENTICATED', message, { 'WWW-Authenticate': challenge });
}

const invalid = () => unauthenticated('Invalid or revoked API key.', 'invalid_token');
const expired = (at: Date) => unauthenticated(`API key expired at ${at.toISOString()}: roll it or create a new one.`, 'invalid_token');

/**
 * Why an open stream's key no longer admits it (docs/events.md "Following"): UNAUTHENTICATED with RFC 6750's
 * `invalid_token`, revoked or expired at `expiredAt`; the message names `invalid_token` too, for transports without headers.
 */
export function keyNoLongerValid(expiredAt?: Date): AppError {
  return expiredAt
    ? unauthenticated(`invalid_token: the API key expired at ${expiredAt.toISOString()}; roll it or create a new one, then reconnect.`, 'invalid_token')
    : unauthenticated('invalid_token: the API key was revoked; reconnect with another key.', 'invalid_token');
}

/** RFC 6750 §3.1: 403 with the scope the operation needs. */
export function insufficientScope(scope: Scope): AppError {
  return new AppError('FORBIDDEN', `This API key lacks the ${scope} scope this operation needs.`, {
    'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${scope}"`,
  });
}

/** The rate-limit counters a key spends (docs/security.md "Limits"): a publishable key per visitor's address, under a key-wide ceiling. */
export function keyCounters(credential: Credential, address: string, defaultQuota: number): RateLimitCounter[] {
  const quota = credential.rateLimit ?? defaultQuota;
  const key = `key:${credential.budgetKeyId}`;
  if (credential.kind !== 'publishable') return [{ name: key, quota }];
  return [
    { name: `${key}:ip:${address}`, quota },
    { name: key, quota: quota * API_KEY_LIMITS.publishableCeilingFactor },
  ];
}

/** The guard over `apiKeys` (its cache included) and `limiter`. */
export function createGuard(apiKeys: Pick<ApiKeyService, 'authentication' | 'usage'>, limiter: RateLimiter): Guard {
  const { authentication } = apiKeys;
  const charge = async (state: GuardState, counters: readonly RateLimitCounter[], units: number) => {
    const { charged, status } = await limiter.charge(counters, units);
    state.rateLimit = status;
    if (charged) return;
    const retryAfter = String(Math.max(1, status.resetSeconds));
    throw new AppError('TOO_MANY_REQUESTS', `Rate limit reached: retry in ${retryAfter} s.`, { 'Retry-After': retryAfter });
  };
  const byAddress = (address: string) => [{ name: `ip:${address}`, quota: limiter.config.unauthenticatedMax }];

  /** A first lookup under way is waited for, so a burst on a new key is charged to the key, not the address. */
  const recognise = async (authorization: unknown) => {
    if (!authorization) return { failure: unauthenticated('Missing API key: send Authorization: Bearer <API_KEY>.') };
    const token = typeof authorization === 'string' ? BEARER.exec(authorization)?.[1] : undefined;
    if (token === undefined) return { failure: unauthenticated('Malformed Authorization header: expected Bearer <API_KEY>.', 'invalid_token') };
    let recognised = authentication.recognise(token);
    const underWay = recognised.state === 'unknown' ? authentication.lookupUnderWay(token) : undefined;
    if (underWay) {
      await underWay.catch(() => undefined);
      recognised = authentication.recognise(token);
    }
    if (recognised.state === 'malformed' || recognised.state === 'refused') return { failure: invalid() };
    if (recognised.state === 'trusted') return { token, knownId: recognised.credential.id, credential: recognised.credential };
    return { token, knownId: recognised.state === 'known' ? recognised.apiKeyId : undefined };
  };

  return {
    async admit({ address, authorization, origin, idempotencyKey, units, budget }, state) {
      const { failure, token, knownId, credential: trusted } = await recognise(authorization);
      if (knownId === undefined) await charge(state, byAddress(address), 1);
      if (failure) throw failure;
      // A trusted key is not looked up (nor hashed) again.
      const credential = trusted ?? (await authentication.find(token, budget));
      if (!credential) throw invalid();
      state.apiKeyId = credential.id;
      state.credential = credential;
      if (hasExpired(credential)) {
        // As any other key that is no longer valid: its address pays.
        if (knownId !== undefined) await charge(state, byAddress(address), 1);
        throw expired(credential.expiresAt!);
      }
      state.counters = keyCounters(credential, address, limiter.config.max);
      await charge(state, state.counters, units);
      state.spent = units;
      if (credential.origins && origin !== undefined && !credential.origins.has(origin)) {
        state.originRefused = true;
        throw new AppError('FORBIDDEN', `This API key may not be used from the origin ${JSON.stringify(origin)}.`);
      }
      apiKeys.usage.noteUse(credential.id);
      const checked = parseIdempotencyKey(idempotencyKey);
      state.caller = { apiKeyId: credential.id, ...(checked !== undefined && { idempotencyKey: checked }), ...(budget && { budget }) };
      return state.caller;
    },
    authorize(state, needed) {
      const scopes = state.credential?.scopes;
      if (!scopes) throw new Error('authorize runs after admit has admitted the caller');
      for (const scope of needed) {
        if (scope === undefined) throw new AppError('FORBIDDEN', 'No API key may run this operation.');
        if (!scopes.has(scope)) throw insufficientScope(scope);
      }
    },
    async spend(state, units) {
      if (state.counters === undefined) throw new Error('spend runs after admit has admitted the caller');
      if (units <= 0) return;
      await charge(state, state.counters, units);
      state.spent = (state.spent ?? 0) + units;
    },
    chargeAddress: (address, state) => charge(state, byAddress(address), 1),
    async giveBack(state) {
      if (state.counters === undefined || !state.spent) return;
      const units = state.spent;
      state.spent = 0;
      state.rateLimit = await limiter.refund(state.counters, units);
    },
  };
}
