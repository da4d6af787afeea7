import type { ApolloServerPlugin } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { FastifyRequest } from 'fastify';
import { GraphQLError } from 'graphql';
import type { AppError } from '../errors/error-catalogue';
import { fieldExtensionsEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';

/**
 * Limits on one GraphQL operation (OWASP GraphQL cheat sheet; issue "hard to break").
 * Armor's defaults, tuned to this schema:
 * - depth 6 (fragments count as a level; introspection, which GraphiQL needs, is exempt):
 *   real queries here are 2 deep;
 * - cost 1000: one field costs 1, a list costs its `limit` times its selection, so
 *   `pets(limit: 100) { id name categoryId status }` costs 400: two full pages per operation.
 * The values are never shown to clients; every rejection says "Query validation error.".
 */
export const QUERY_LIMITS = Object.freeze({
  maxDepth: 6,
  maxAliases: 15,
  maxTokens: 1000,
  maxDirectives: 50,
  maxCost: 1000,
  /** Rate limiting charges one request per started 100 of cost. */
  costPerRequestUnit: 100,
});

/** The one message for every rejected operation: limits are not revealed. */
export const QUERY_REJECTED_MESSAGE = 'Query validation error.';

/**
 * Apollo Server settings from GraphQL Armor: depth, alias and directive limits as
 * validation rules, field suggestions blocked in production, batching off, no stack traces.
 * Armor's own cost rule is off: the cost model is {@link costLimitPlugin}'s, the one that
 * knows `limit`.
 *
 * @param production - true hides field suggestions ("Did you mean …?").
 */
export function armorSettings(production: boolean) {
  const hidden = { exposeLimits: false, errorMessage: QUERY_REJECTED_MESSAGE } as const;
  return new ApolloArmor({
    maxDepth: { n: QUERY_LIMITS.maxDepth, ignoreIntrospection: true, flattenFragments: false, ...hidden },
    maxAliases: { n: QUERY_LIMITS.maxAliases, ...hidden },
    // Armor's token check re-parses in a hook and turns syntax errors into 500s: graphql-js's
    // own `maxTokens` parse option does it instead (see `parseOptions` below).
    maxTokens: { enabled: false },
    maxDirectives: { n: QUERY_LIMITS.maxDirectives, ...hidden },
    costLimit: { enabled: false },
    blockFieldSuggestion: { enabled: production },
  }).protect();
}

/** graphql-js parse options for Apollo: the token limit, enforced while parsing. */
export const PARSE_OPTIONS = Object.freeze({ maxTokens: QUERY_LIMITS.maxTokens });

/**
 * Gives every limit rejection the same message: hides the token limit that graphql-js writes
 * into its parse error, and Armor's misleading "Syntax Error:" prefix.
 *
 * @returns the client-facing message for a parse error.
 */
export function withoutLimits(message: string): string {
  // graphql-js says "more that N tokens"; Armor prefixes its own message with "Syntax Error: ".
  return /contains more tha[nt] \d+ tokens|^Syntax Error: Query validation error\.$/.test(message) ? QUERY_REJECTED_MESSAGE : message;
}

/**
 * Rejects an operation whose cost is over {@link QUERY_LIMITS}.maxCost, once its variables
 * are known (so `pets(limit: $n)` is priced with the real `$n`), and charges the rate limit
 * one request per started {@link QUERY_LIMITS}.costPerRequestUnit of cost. Costs come from the schema's
 * `complexity` extensions (type-graphql's `complexity` option), 1 per field otherwise.
 *
 * @param spend - charges the caller's rate limit (see http/rate-limit.ts).
 * @returns an Apollo plugin; a rejection is HTTP 400 GRAPHQL_VALIDATION_FAILED, an exhausted
 *   rate limit HTTP 429 TOO_MANY_REQUESTS.
 */
export function costLimitPlugin(
  spend: (request: FastifyRequest, units: number) => Promise<void>,
): ApolloServerPlugin<{ request: FastifyRequest }> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document, schema, contextValue }) {
          let cost: number;
          try {
            cost = getComplexity({
              schema,
              query: document,
              operationName: request.operationName ?? undefined,
              variables: request.variables ?? {},
              estimators: [fieldExtensionsEstimator(), simpleEstimator({ defaultComplexity: 1 })],
            });
          } catch {
            return; // variables that do not fit the operation: Apollo answers BAD_USER_INPUT next
          }
          if (cost > QUERY_LIMITS.maxCost) {
            throw new GraphQLError(QUERY_REJECTED_MESSAGE, {
              extensions: { code: 'GRAPHQL_VALIDATION_FAILED', http: { status: 400 } },
            });
          }
          // The request already paid 1 unit at the door; a costly one pays for its cost.
          const units = Math.ceil(cost / QUERY_LIMITS.costPerRequestUnit) - 1;
          if (units > 0) {
            try {
              await spend(contextValue.request, units);
            } catch (error) {
              const appError = error as AppError;
              throw new GraphQLError(appError.message, {
                originalError: appError,
                extensions: { code: appError.code, http: { status: appError.status, headers: new Map(Object.entries(appError.headers)) } },
              });
            }
          }
        },
      };
    },
  };
}
