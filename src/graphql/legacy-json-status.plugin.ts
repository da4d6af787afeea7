import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLError } from 'graphql';
import Negotiator from 'negotiator';
import { AppError } from '../errors/error-catalogue';
import type { GraphqlContext } from './graphql-context';
import { queryLimitOf } from './query-limits';

/**
 * Apollo Server 5's single-result types, in its order (`chooseContentTypeForSingleResultResponse`,
 * not exported): a tie goes to the first. Both `application/json` ones are the legacy format.
 */
const APOLLO_RESPONSE_TYPES = [
  'application/json; charset=utf-8',
  'application/graphql-response+json; charset=utf-8',
  'application/json; callbackSpec=1.0; charset=utf-8',
];

/**
 * The media type Apollo answers a single result in for this `Accept` (negotiator ranks as Apollo
 * does); undefined when neither JSON type is allowed (Apollo's 406).
 */
export function graphqlResponseTypeFor(accept: string | undefined): string | undefined {
  if (!accept) return APOLLO_RESPONSE_TYPES[0];
  const chosen = new Negotiator({ headers: { accept } }).mediaType(APOLLO_RESPONSE_TYPES);
  return chosen === APOLLO_RESPONSE_TYPES[2] ? APOLLO_RESPONSE_TYPES[0] : chosen;
}

/** Whether Apollo answers in the legacy `application/json` format (GraphQL over HTTP, "Legacy Watershed"). */
export function answersLegacyJson(accept: string | undefined): boolean {
  return graphqlResponseTypeFor(accept) === APOLLO_RESPONSE_TYPES[0];
}

/** Apollo's codes for GraphQL request errors (nothing ran). */
const REQUEST_ERROR_CODES: ReadonlySet<unknown> = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'OPERATION_RESOLUTION_FAILURE',
]);

/** A spec request error: not one of our query limits nor an AppError carrying its own status. */
function isSpecRequestError(error: GraphQLError): boolean {
  if (!REQUEST_ERROR_CODES.has(error.extensions?.code)) return false;
  if (error.originalError instanceof AppError) return false;
  return queryLimitOf(error) === undefined;
}

/**
 * Apollo plugin: request errors answered in legacy `application/json` get 200, as GraphQL over
 * HTTP requires, where Apollo sends 400 whatever the `Accept` (docs/graphql.md "Status codes").
 * Query limits stay 400: the server refusing work, not a document the client can check.
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
