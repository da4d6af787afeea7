import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLError } from 'graphql';
import Negotiator from 'negotiator';
import { AppError } from '../errors/error-catalogue';
import type { GraphqlContext } from './graphql-context';
import { queryLimitOf } from './query-limits';

/**
 * The single-result media types Apollo Server 5 chooses from, in its order (its
 * `chooseContentTypeForSingleResultResponse`, not exported): on a tie, such as a bare `*` / `*`,
 * Apollo answers `application/json`. Both JSON ones are the legacy `application/json` format.
 */
const APOLLO_RESPONSE_TYPES = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'application/json; callbackSpec=1.0; charset=utf-8',
];

/**
 * The media type Apollo answers a single result in, for this `Accept`: `negotiator` ranks the
 * types exactly as Apollo does; a missing `Accept` counts as `application/json`, as the GraphQL
 * over HTTP spec and Apollo both say.
 *
 * @param accept - the request's `Accept` header, if any.
 * @returns `application/json; charset=utf-8`, `application/graphql-response+json; charset=utf-8`,
 *   or undefined for an `Accept` that allows neither (Apollo answers that 406). Never throws.
 */
export function graphqlResponseTypeFor(accept: string | undefined): string | undefined {
  if (!accept) return APOLLO_RESPONSE_TYPES[0];
  const chosen = new Negotiator({ headers: { accept } }).mediaType(APOLLO_RESPONSE_TYPES);
  return chosen === APOLLO_RESPONSE_TYPES[2] ? APOLLO_RESPONSE_TYPES[0] : chosen;
}

/**
 * Whether Apollo answers this request in the legacy `application/json` format rather than
 * `application/graphql-response+json` (GraphQL over HTTP, "Legacy Watershed").
 *
 * @param accept - the request's `Accept` header, if any.
 * @returns true for `application/json`; false for `application/graphql-response+json` and for
 *   an `Accept` that allows neither. Never throws.
 */
export function answersLegacyJson(accept: string | undefined): boolean {
  return graphqlResponseTypeFor(accept) === APOLLO_RESPONSE_TYPES[0];
}

/** Apollo's codes for GraphQL request errors: the document does not parse or validate, its variables do not coerce, no operation to run. */
const REQUEST_ERROR_CODES: ReadonlySet<unknown> = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'OPERATION_RESOLUTION_FAILURE',
]);

/**
 * A GraphQL request error of the spec's kind, raised by graphql-js through Apollo: not one of
 * our limits (depth, aliases, directives, tokens, cost, mutations: see queryLimitOf) and not an
 * AppError a plugin of ours raised with its own status (cost limit 400, rate limit 429).
 */
function isSpecRequestError(error: GraphQLError): boolean {
  if (!REQUEST_ERROR_CODES.has(error.extensions?.code)) return false;
  if (error.originalError instanceof AppError) return false;
  return queryLimitOf(error) === undefined;
}

/**
 * Apollo plugin for the GraphQL over HTTP spec's status codes of the legacy `application/json`
 * format (docs/graphql.md "Status codes", docs/errors.md): a request whose parse, validation or variable coercion
 * fails, or whose operation cannot be chosen, gets HTTP 200 (with only `errors` in the body)
 * when it is answered in `application/json`, where Apollo Server sends 400 whatever the
 * `Accept`. It stays 400 for `application/graphql-response+json`, as that format requires.
 *
 * Left alone, with their documented statuses: errors raised before Apollo runs (401, 413, 415,
 * 429 by the guard, sent by `sendGraphqlError`), Apollo's own HTTP-level refusals (400
 * BAD_REQUEST for a malformed request, 405 for a mutation over GET, 406), our query limits
 * (400, naming the limit, cost limit included: the server refusing work, like 413 or
 * 429, rather than a document the client can check against the schema), execution errors (200
 * with `data` already).
 *
 * Input: Apollo's `willSendResponse` request context (the request's `Accept` header, the
 * response's HTTP status and body, the raw `errors` Apollo met). Output: it may set
 * `response.http.status` from 400 to 200; nothing else changes. Throws nothing.
 *
 * @returns the plugin, to register in `plugins` of the ApolloServer.
 */
export function legacyJsonStatusPlugin(): ApolloServerPlugin<GraphqlContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ request, response, errors }) {
          if (response.http.status !== 400 || response.body.kind !== 'single') return;
          // A request error means nothing ran: the body holds `errors` and no `data`.
          if (response.body.singleResult.data !== undefined || !errors?.length || !errors.every(isSpecRequestError)) return;
          if (!answersLegacyJson(request.http?.headers.get('accept'))) return;
          response.http.status = 200;
        },
      };
    },
  };
}
