import type { FastifyReply, FastifyRequest } from 'fastify';
import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { AppError, ERROR_CATALOGUE, type ErrorCode, codeForStatus, toAppError } from '../errors/error-catalogue';
import { sendError } from '../http/error.handler';
import { graphqlResponseTypeFor } from './legacy-json-status.plugin';

function isCatalogued(code: unknown): code is ErrorCode {
  return typeof code === 'string' && code !== 'INTERNAL_SERVER_ERROR' && Object.hasOwn(ERROR_CATALOGUE, code);
}

/**
 * The one GraphQL form of an AppError (spec "Errors"): its message, `locations` and `path` from `at`, `extensions.code`, and for an error
 * to retry later (503, 429) `extensions.retryAfterSeconds` from its `Retry-After`, so that a field error in a 200 answer says it too.
 */
function graphqlError(error: AppError, at: Pick<GraphQLFormattedError, 'locations' | 'path'> = {}): GraphQLFormattedError {
  const retryAfter = error.headers['Retry-After'];
  return {
    message: error.message,
    ...(at.locations && { locations: at.locations }),
    ...(at.path && { path: at.path }),
    extensions: { code: error.code, ...(retryAfter !== undefined && { retryAfterSeconds: Number(retryAfter) }) },
  };
}

/**
 * An AppError (or a code and message) as the GraphQLError an Apollo plugin throws or graphql-ws sends, carrying the HTTP status and
 * headers Apollo is to answer with (429 with Retry-After, 400, …); `formatError` renders it with {@link graphqlError}.
 */
export function thrownGraphqlError(raised: AppError | ErrorCode, message?: string): GraphQLError {
  const error = raised instanceof AppError ? raised : new AppError(raised, message);
  return new GraphQLError(error.message, {
    originalError: error,
    extensions: { code: error.code, http: { status: error.status, headers: new Map(Object.entries(error.headers)) } },
  });
}

/** The HTTP status Apollo will answer with for this error, when it set one. */
function httpStatusOf(error: unknown): number | undefined {
  const status = (error as { extensions?: { http?: { status?: unknown } } } | null)?.extensions?.http?.status;
  return typeof status === 'number' ? status : undefined;
}

/**
 * Apollo `formatError`: every GraphQL error leaves with `extensions.code` from the catalogue and nothing else (no stack trace):
 * - an AppError (thrown by a resolver, or {@link thrownGraphqlError}) → its code and message;
 * - Apollo's own errors → their code when the catalogue gives it the HTTP status Apollo sends, else the catalogue's code for that
 *   status (a GET mutation, answered 405, says METHOD_NOT_ALLOWED), so code and status never disagree;
 * - anything else → INTERNAL_SERVER_ERROR with a generic message, the original passed to `logUnexpected`.
 */
export function createGraphqlErrorFormatter(logUnexpected: (error: unknown) => void) {
  return function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
    const original = unwrapResolverError(error);
    if (original instanceof AppError) return graphqlError(original, formatted);
    // Raised by a plugin of ours or sent by graphql-ws (thrownGraphqlError): no path, so unwrapResolverError keeps the GraphQLError.
    const raised = (error as GraphQLError | null)?.originalError;
    if (raised instanceof AppError) return graphqlError(raised, formatted);
    const code = formatted.extensions?.code;
    const status = httpStatusOf(error);
    if (isCatalogued(code) && (status === undefined || ERROR_CATALOGUE[code].status === status)) {
      return graphqlError(new AppError(code, formatted.message), formatted);
    }
    const byStatus = status === undefined ? undefined : codeForStatus(status);
    if (byStatus && byStatus !== 'INTERNAL_SERVER_ERROR') return graphqlError(new AppError(byStatus, formatted.message), formatted);
    logUnexpected(original);
    const { appError } = toAppError(original); // INTERNAL_SERVER_ERROR, or SERVICE_UNAVAILABLE when the database is down
    return graphqlError(appError, formatted);
  };
}

/**
 * Fastify error handler of the GraphQL route, for errors raised before Apollo runs (the guard, an unreadable body): {@link sendError}
 * with the body `{ errors: [graphqlError] }` in the media type Apollo would answer this `Accept` with (`application/json` when none).
 *
 * @param extensions - the body's top-level `extensions`, if any (the rate limit's status: see PriceExtensions in cost-limit.plugin.ts).
 */
export function sendGraphqlError(error: unknown, request: FastifyRequest, reply: FastifyReply, extensions?: Readonly<Record<string, unknown>>): void {
  reply.type(graphqlResponseTypeFor(request.headers.accept) ?? 'application/json; charset=utf-8');
  sendError(error, request, reply, (appError) => ({ errors: [graphqlError(appError)], ...(extensions && { extensions }) }));
}
