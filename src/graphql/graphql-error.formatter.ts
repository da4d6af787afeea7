import type { FastifyReply, FastifyRequest } from 'fastify';
import { unwrapResolverError } from '@apollo/server/errors';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { AppError, ERROR_CATALOGUE, type ErrorCode, codeForStatus, toAppError } from '../errors/error-catalogue';
import { sendError } from '../http/error.handler';
import { graphqlResponseTypeFor } from './legacy-json-status.plugin';

function isCatalogued(code: unknown): code is ErrorCode {
  return typeof code === 'string' && code !== 'INTERNAL_SERVER_ERROR' && Object.hasOwn(ERROR_CATALOGUE, code);
}

/** The GraphQL form of an AppError (spec "Errors"); `retryAfterSeconds` so a field error in a 200 answer says it too. */
function graphqlError(error: AppError, at: Pick<GraphQLFormattedError, 'locations' | 'path'> = {}): GraphQLFormattedError {
  const retryAfter = error.headers['Retry-After'];
  return {
    message: error.message,
    ...(at.locations && { locations: at.locations }),
    ...(at.path && { path: at.path }),
    extensions: { code: error.code, ...(retryAfter !== undefined && { retryAfterSeconds: Number(retryAfter) }) },
  };
}

/** An AppError as the GraphQLError a plugin throws or graphql-ws sends, carrying the HTTP status and headers for Apollo. */
export function thrownGraphqlError(raised: AppError | ErrorCode, message?: string): GraphQLError {
  const error = raised instanceof AppError ? raised : new AppError(raised, message);
  return new GraphQLError(error.message, {
    originalError: error,
    extensions: { code: error.code, http: { status: error.status, headers: new Map(Object.entries(error.headers)) } },
  });
}

function httpStatusOf(error: unknown): number | undefined {
  const status = (error as { extensions?: { http?: { status?: unknown } } } | null)?.extensions?.http?.status;
  return typeof status === 'number' ? status : undefined;
}

/**
 * Apollo `formatError`: every error leaves with a catalogue code, never a stack. An Apollo code whose
 * status disagrees with Apollo's is replaced by the status's code (a GET mutation's 405 says METHOD_NOT_ALLOWED).
 */
export function createGraphqlErrorFormatter(logUnexpected: (error: unknown) => void) {
  return function formatError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
    const original = unwrapResolverError(error);
    if (original instanceof AppError) return graphqlError(original, formatted);
    // thrownGraphqlError has no path, so unwrapResolverError keeps the GraphQLError.
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
    const { appError } = toAppError(original); // INTERNAL_SERVER_ERROR, or the database's 503 or 504
    return graphqlError(appError, formatted);
  };
}

/** The GraphQL route's error handler for errors before Apollo runs: a GraphQL body in the type Apollo would choose. */
export function sendGraphqlError(error: unknown, request: FastifyRequest, reply: FastifyReply, extensions?: Readonly<Record<string, unknown>>): void {
  reply.type(graphqlResponseTypeFor(request.headers.accept) ?? 'application/json; charset=utf-8');
  sendError(error, request, reply, (appError) => ({ errors: [graphqlError(appError)], ...(extensions && { extensions }) }));
}
