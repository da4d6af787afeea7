import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Caller } from '../pets/caller';
import type { Guard, GuardState } from './guard';
import type { RateLimitStatus } from './rate-limiter';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the guard established of this request (set by its onRequest hook, on guarded routes only). */
    guard?: GuardState;
  }
}

/** The policy name in the RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-10). */
const POLICY = 'default';

/** What a surface needs of the guard for HTTP requests. */
export interface RequestGuard {
  /** The onRequest hook of every guarded route: {@link Guard.admit} of the request, before its body is read. */
  hook: onRequestAsyncHookHandler;
  /** {@link Guard.spend} for the request's caller. */
  spend: (request: FastifyRequest, units: number) => Promise<void>;
  /** Where the request's rate limit stands, as its RateLimit header fields say; undefined when it was not counted. */
  statusOf: (request: FastifyRequest) => RateLimitStatus | undefined;
}

/**
 * The guard for HTTP requests (docs/security.md "Limits"): every answer to a counted request gets
 * `RateLimit-Policy` and `RateLimit`, which tell what is left after everything it was charged.
 *
 * @param app - the root instance, whose answers get the header fields.
 */
export function guardRequests(app: FastifyInstance, guard: Guard): RequestGuard {
  app.addHook('onSend', async (request, reply) => {
    const status = request.guard?.rateLimit;
    if (!status) return;
    reply.header('RateLimit-Policy', `"${POLICY}";q=${status.quota};w=${status.windowSeconds}`);
    reply.header('RateLimit', `"${POLICY}";r=${status.remaining};t=${status.resetSeconds}`);
  });
  return {
    hook: async function guardRequest(request) {
      request.guard = {};
      const { authorization, 'idempotency-key': idempotencyKey } = request.headers;
      await guard.admit({ address: request.ip, authorization, idempotencyKey, units: 1 }, request.guard);
    },
    spend: (request, units) => guard.spend(request.guard ?? {}, units),
    statusOf: (request) => request.guard?.rateLimit,
  };
}

/**
 * The caller of a guarded request, for a surface to hand to the pet operations.
 *
 * @throws Error when the route is not guarded (a wiring mistake, never the client's).
 */
export function callerOf(request: FastifyRequest): Caller {
  const caller = request.guard?.caller;
  if (!caller) throw new Error(`${request.method} ${request.routeOptions.url} is not behind the guard`);
  return caller;
}
