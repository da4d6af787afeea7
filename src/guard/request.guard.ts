import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { contextOf, startGuardState } from '../http/request-context';
import type { AuditActor } from '../audit/audit-trail';
import type { Caller } from '../pets/caller';
import { type Scope, restOperationScope } from '../auth/api-key-policy';
import type { Credential } from '../auth/api-key.authenticator';
import type { Guard, GuardState } from './guard';
import type { RateLimitStatus } from './rate-limiter';

/** The policy name in the RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-10). */
const POLICY = 'default';

/** CORS response fields that grant a browser the answer (Fetch standard): removed when the key refuses the origin. */
const CORS_GRANT = ['access-control-allow-origin', 'access-control-allow-credentials', 'access-control-expose-headers'];

/** What a surface needs of the guard for HTTP requests. */
export interface RequestGuard {
  /** onRequest, so a refusal comes before the body is read: admits the caller; GraphQL decides scopes once parsed. */
  hook: onRequestAsyncHookHandler;
  /** {@link hook}, then the scope the route's operationId needs (api-key-policy.ts OPERATION_SCOPES.rest). */
  operationHook: onRequestAsyncHookHandler;
  spend: (request: FastifyRequest, units: number) => Promise<void>;
  /** Guard.authorize for the request's caller. */
  authorize: (request: FastifyRequest, needed: Iterable<Scope | undefined>) => void;
  /** onRequest for an operation open to anyone (no key): charges the request's address, as a request without a key is. */
  addressHook: onRequestAsyncHookHandler;
  /** Undefined when the request was not counted. */
  statusOf: (request: FastifyRequest) => RateLimitStatus | undefined;
}

/**
 * The guard for HTTP requests (docs/security.md "Limits", docs/api-keys.md): counted answers get `RateLimit-Policy` and
 * `RateLimit`, answers to a found key with an expiry `API-Key-Expires` (an RFC 9110 HTTP-date). A 304 (RFC 9110
 * §15.4.5) gets its units back before those fields are written ({@link Guard.giveBack}).
 */
export function guardRequests(app: FastifyInstance, guard: Guard): RequestGuard {
  // Formatted once per cached key (a credential lives as long as its cache entry), not per answer.
  const expiryDates = new WeakMap<Credential, string>();
  const expiryDateOf = (credential: Credential, expiresAt: Date) => {
    let date = expiryDates.get(credential);
    if (date === undefined) expiryDates.set(credential, (date = expiresAt.toUTCString()));
    return date;
  };
  const writeFields = (reply: FastifyReply, state: GuardState | undefined) => {
    const status = state?.rateLimit;
    if (status) {
      reply.header('RateLimit-Policy', `"${POLICY}";q=${status.quota};w=${status.windowSeconds}`);
      reply.header('RateLimit', `"${POLICY}";r=${status.remaining};t=${status.resetSeconds}`);
    }
    const credential = state?.credential;
    if (credential?.expiresAt) reply.header('API-Key-Expires', expiryDateOf(credential, credential.expiresAt));
    if (state?.originRefused) for (const name of CORS_GRANT) reply.removeHeader(name);
  };
  app.addHook('onSend', (request, reply, _payload, done) => {
    const state = contextOf(request)?.guard;
    // A conditional request answered 304 is not charged (docs/security.md "Limits"): a poller pays only for changes.
    if (reply.statusCode === 304 && state?.spent) {
      void guard
        .giveBack(state)
        // The 304 is still right; its unit stays spent and its fields say so.
        .catch((error: unknown) => request.log.warn({ err: error }, "cannot give a 304's rate-limit unit back now"))
        .finally(() => {
          writeFields(reply, state);
          done();
        });
      return;
    }
    writeFields(reply, state);
    done();
  });
  const admit = async (request: FastifyRequest) => {
    const { state, budget } = startGuardState(request);
    const { authorization, origin, 'idempotency-key': idempotencyKey } = request.headers;
    await guard.admit({ address: request.ip, authorization, origin, idempotencyKey, units: 1, budget }, state);
    return state;
  };
  return {
    hook: async function guardRequest(request) {
      await admit(request);
    },
    operationHook: async function guardOperation(request) {
      const state = await admit(request);
      guard.authorize(state, [restOperationScope(request.routeOptions.schema?.operationId)]);
    },
    addressHook: async function chargeAddress(request) {
      await guard.chargeAddress(request.ip, startGuardState(request).state);
    },
    spend: (request, units) => guard.spend(contextOf(request)?.guard ?? {}, units),
    authorize: (request, needed) => guard.authorize(contextOf(request)?.guard ?? {}, needed),
    statusOf: (request) => contextOf(request)?.guard?.rateLimit,
  };
}

/** What the guard established of a guarded request (its key's credential, counters): what a stream is admitted with. */
export function guardStateOf(request: FastifyRequest): GuardState {
  const state = contextOf(request)?.guard;
  if (!state?.caller) throw new Error(`${request.method} ${request.routeOptions.url} is not behind the guard`);
  return state;
}

/** The caller of a guarded request; throws on an unguarded route (a wiring mistake). */
export function callerOf(request: FastifyRequest): Caller {
  const caller = contextOf(request)?.guard?.caller;
  if (!caller) throw new Error(`${request.method} ${request.routeOptions.url} is not behind the guard`);
  return caller;
}

/**
 * Who asks, for the audit trail (docs/admin.md "Audit trail"): the key the guard found (admitted, or refused a scope),
 * the request's id and its address. Throws on a request whose key the guard has not found (a wiring mistake).
 */
export function auditActorOf(request: FastifyRequest): AuditActor {
  const keyId = contextOf(request)?.guard?.apiKeyId;
  if (keyId === undefined) throw new Error(`${request.method} ${request.routeOptions.url} has no key found by the guard`);
  return { channel: 'api', keyId, requestId: request.id, address: request.ip };
}
