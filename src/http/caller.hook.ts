import type { FastifyRequest } from 'fastify';
import { parseIdempotencyKey } from '../idempotency/idempotency-key';
import type { Caller } from '../pets/caller';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is calling, set by {@link readCaller} once the request is authenticated. */
    caller?: Caller;
  }
}

/**
 * The last step of the guard both surfaces share (after authentication and the rate limit):
 * describes the caller for the pet operations, so that nothing below the surfaces reads a
 * header. The Idempotency-Key is checked here, once, for every guarded request.
 *
 * Sets `request.caller`: `{ apiKeyId, idempotencyKey? }`.
 *
 * @throws AppError BAD_USER_INPUT for a malformed Idempotency-Key (see parseIdempotencyKey).
 */
export async function readCaller(request: FastifyRequest): Promise<void> {
  if (request.apiKeyId === undefined) throw new Error('readCaller runs after the auth hook has authenticated the request');
  const idempotencyKey = parseIdempotencyKey(request.headers['idempotency-key']);
  request.caller = { apiKeyId: request.apiKeyId, ...(idempotencyKey !== undefined && { idempotencyKey }) };
}

/**
 * The caller of a guarded request, for a surface to hand to the pet operations.
 *
 * @throws Error when the route is not guarded (a wiring mistake, never the client's).
 */
export function callerOf(request: FastifyRequest): Caller {
  if (!request.caller) throw new Error(`${request.method} ${request.routeOptions.url} is not behind the guard`);
  return request.caller;
}
