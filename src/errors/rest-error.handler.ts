import type { FastifyReply, FastifyRequest } from 'fastify';
import { toAppError } from './error-catalogue';

/**
 * Fastify error handler of the REST surface: sends the spec's Error body
 * `{ code, message, status }` with `status` equal to the HTTP status, plus the error's headers.
 * Unexpected errors are logged in full and answered with a generic 500.
 */
export function sendRestError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { appError, unexpected } = toAppError(error);
  if (unexpected) request.log.error({ err: error }, 'unexpected error');
  return reply.code(appError.status).headers(appError.headers).send(appError.toBody());
}
