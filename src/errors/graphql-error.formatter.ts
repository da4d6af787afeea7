import type { FastifyReply, FastifyRequest } from 'fastify';
import { unwrapResolverError } from '@apollo/server/errors';
import type { GraphQLFormattedError } from 'graphql';
import { withoutLimits } from '../graphql/query-limits';
import { AppError, ERROR_CATALOGUE, type ErrorCode, codeForStatus, toAppError } from './error-catalogue';

function isCatalogued(code: unknown): code is ErrorCode {
  return typeof code === 'string' && code !== 'INTERNAL_SERVER_ERROR' && Object.hasOwn(ERROR_CATALOGUE, code);
}

/** The HTTP status Apollo will answer with for this error, when it set one. */
function httpStatusOf(error: unknown): number | undefined {
  const status = (error as { extensions?: { http?: { status?: unknown } } } | null)?.extensions?.http?.status;
  return typeof status === 'number' ? status : undefined;
}

/**
 * Apollo `formatError`: every GraphQL error leaves with `extensions.code` from the catalogue
 * and nothing else in `extensions` (no stack trace, no exception details).
 * - AppError thrown by a resolver → its code and message;
 * - Apollo's own errors → their code when the catalogue gives it the HTTP status Apollo sends;
 *   otherwise the catalogue's code for that status (a GET mutation, answered 405, says
 *   METHOD_NOT_ALLOWED), so code and status never disagree;
 * - anything else → INTERNAL_SERVER_ERROR with a generic message; the original is passed to
 *   `logUnexpected` so operators still see it.
 */
export function createGraphqlErrorFormatter(logUnexpected: (error: unknown) => void) {
  return function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
    const { locations, path } = formatted;
    const original = unwrapResolverError(error);
    if (original instanceof AppError) {
      return { message: original.message, locations, path, extensions: { code: original.code } };
    }
    const code = formatted.extensions?.code;
    const status = httpStatusOf(error);
    if (isCatalogued(code) && (status === undefined || ERROR_CATALOGUE[code].status === status)) {
      return { message: withoutLimits(formatted.message), locations, path, extensions: { code } };
    }
    const byStatus = status === undefined ? undefined : codeForStatus(status);
    if (byStatus && byStatus !== 'INTERNAL_SERVER_ERROR') {
      return { message: formatted.message, locations, path, extensions: { code: byStatus } };
    }
    logUnexpected(original);
    const { appError } = toAppError(original); // INTERNAL_SERVER_ERROR, or SERVICE_UNAVAILABLE when the database is down
    return { message: appError.message, locations, path, extensions: { code: appError.code } };
  };
}

/**
 * Fastify error handler of the GraphQL route, for errors raised before Apollo runs (the auth
 * hook, an unreadable body): the HTTP status from the catalogue, and a GraphQL response body
 * `{ errors: [{ message, extensions: { code } }] }`.
 */
export function sendGraphqlError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { appError, unexpected } = toAppError(error);
  if (unexpected) request.log.error({ err: error }, 'unexpected error');
  return reply
    .code(appError.status)
    .headers(appError.headers)
    .send({ errors: [{ message: appError.message, extensions: { code: appError.code } }] });
}
