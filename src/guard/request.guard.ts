import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { contextOf, startGuardState } from '../http/request-context';
import type { Caller } from '../pets/caller';
import type { Guard } from './guard';
import type { RateLimitStatus } from './rate-limiter';

/** The policy name in the RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-10). */
const POLICY = 'default';

/** What a surface needs of the guard for HTTP requests. */
export interface RequestGuard {
  /** onRequest, so a refusal comes before the body is read. */
  hook: onRequestAsyncHookHandler;
  spend: (request: FastifyRequest, units: number) => Promise<void>;
  /** Undefined when the request was not counted. */
  statusOf: (request: FastifyRequest) => RateLimitStatus | undefined;
}

/** The guard for HTTP requests; counted answers get `RateLimit-Policy` and `RateLimit` (docs/security.md "Limits"). */
export function guardRequests(app: FastifyInstance, guard: Guard): RequestGuard {
  app.addHook('onSend', (request, reply, _payload, done) => {
    const status = contextOf(request)?.guard?.rateLimit;
    if (status) {
      reply.header('RateLimit-Policy', `"${POLICY}";q=${status.quota};w=${status.windowSeconds}`);
      reply.header('RateLimit', `"${POLICY}";r=${status.remaining};t=${status.resetSeconds}`);
    }
    done();
  });
  return {
    hook: async function guardRequest(request) {
      const { state, budget } = startGuardState(request);
      const { authorization, 'idempotency-key': idempotencyKey } = request.headers;
      await guard.admit({ address: request.ip, authorization, idempotencyKey, units: 1, budget }, state);
    },
    spend: (request, units) => guard.spend(contextOf(request)?.guard ?? {}, units),
    statusOf: (request) => contextOf(request)?.guard?.rateLimit,
  };
}

/** The caller of a guarded request; throws on an unguarded route (a wiring mistake). */
export function callerOf(request: FastifyRequest): Caller {
  const caller = contextOf(request)?.guard?.caller;
  if (!caller) throw new Error(`${request.method} ${request.routeOptions.url} is not behind the guard`);
  return caller;
}
