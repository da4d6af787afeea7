import type { ApolloServerPlugin } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { FastifyRequest } from 'fastify';
import { GraphQLError, OperationTypeNode, getVariableValues } from 'graphql';
import { AppError } from '../errors/error-catalogue';
import { type ComplexityEstimator, fieldExtensionsEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';

/**
 * Limits on one GraphQL operation (OWASP GraphQL cheat sheet; issue "hard to break"; README
 * "Security"). Armor's defaults, tuned to this schema:
 * - depth 6 (fragments count as a level; introspection, which GraphiQL needs, is exempt):
 *   real queries here are 2 deep;
 * - cost 1000, priced by {@link databaseFieldCost}: a field that reads or writes the database
 *   costs at least one request's worth (100), a list its `limit` times its selection, any
 *   other field 1. So `pets(limit: 100) { id name categoryId status }` costs 400 (two full
 *   pages per operation), and one operation reads or writes the database at most 10 times;
 * - 1 mutation field (`createPet`) per operation: one create per operation, as on REST, and
 *   one Idempotency-Key never covers several creates.
 * The values are never shown to clients; every rejection says "Query validation error.".
 */
export const QUERY_LIMITS = Object.freeze({
  maxDepth: 6,
  maxAliases: 15,
  maxTokens: 1000,
  maxDirectives: 50,
  maxCost: 1000,
  /** One request's worth of cost: the rate limit charges 1 request per started 100 of cost. */
  costPerRequestUnit: 100,
  /** Root fields of the Mutation type per operation, counted as written (aliases and fragments included, `@skip`/`@include` applied). */
  maxMutations: 1,
});

/**
 * The price of a field that reads or writes the database (`pets`, `pet`, `createPet`): its
 * selection once per pet it can return, and at least one request's worth, so that N such
 * fields in one operation cost at least N requests, what N REST calls cost (README "Security").
 *
 * @param pets - how many pets the field can return: 1 for `pet` and `createPet`, `limit` for `pets`.
 * @param selection - the cost of its selection (type-graphql's `childComplexity`), 1 per field.
 * @returns its cost, in the units of {@link QUERY_LIMITS}.maxCost.
 */
export function databaseFieldCost(pets: number, selection: number): number {
  return Math.max(QUERY_LIMITS.costPerRequestUnit, pets * selection);
}

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
 * An AppError as an Apollo plugin raises it before execution: the catalogue's code, and the
 * HTTP status and headers Apollo is to answer with (429 with Retry-After, 400, …).
 */
function raisedByPlugin(error: AppError): GraphQLError {
  return new GraphQLError(error.message, {
    originalError: error,
    extensions: { code: error.code, http: { status: error.status, headers: new Map(Object.entries(error.headers)) } },
  });
}

/**
 * Rejects an operation that creates more than {@link QUERY_LIMITS}.maxMutations times or costs
 * more than {@link QUERY_LIMITS}.maxCost, once its variables are known (so `pets(limit: $n)` is
 * priced with the real `$n`, and `@skip`/`@include` are applied), and charges the rate limit for
 * the whole operation: one request per started {@link QUERY_LIMITS}.costPerRequestUnit of cost,
 * of which the request already paid 1 when it came in. This runs in `didResolveOperation`, before
 * anything executes, so a refused operation reads and writes nothing. An operation that cannot be
 * priced (fragments that expand past 10,000 selections) is refused too. Costs come from the schema's
 * `complexity` extensions (type-graphql's `complexity` option, see {@link databaseFieldCost}),
 * 1 per field otherwise.
 *
 * @param spend - charges the caller's rate limit that many more requests, or throws the AppError
 *   TOO_MANY_REQUESTS without charging when fewer are left (see http/rate-limit.ts).
 * @returns an Apollo plugin; a rejection is HTTP 400 GRAPHQL_VALIDATION_FAILED, an exhausted
 *   rate limit HTTP 429 TOO_MANY_REQUESTS.
 */
export function costLimitPlugin(
  spend: (request: FastifyRequest, units: number) => Promise<void>,
): ApolloServerPlugin<{ request: FastifyRequest }> {
  const rejected = () => raisedByPlugin(new AppError('GRAPHQL_VALIDATION_FAILED', QUERY_REJECTED_MESSAGE));
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ request, document, schema, operation, contextValue }) {
          if (!operation) return; // Apollo answers OPERATION_RESOLUTION_FAILURE
          // Variables that do not fit the operation: Apollo answers BAD_USER_INPUT next, running nothing.
          if (getVariableValues(schema, operation.variableDefinitions ?? [], request.variables ?? {}).errors) return;
          const measure = (estimators: ComplexityEstimator[]) =>
            getComplexity({ schema, query: document, operationName: request.operationName ?? undefined, variables: request.variables ?? {}, estimators });
          let cost: number;
          let mutations = 0;
          try {
            cost = measure([fieldExtensionsEstimator(), simpleEstimator({ defaultComplexity: 1 })]);
            if (operation.operation === OperationTypeNode.MUTATION) {
              const mutationType = schema.getMutationType();
              mutations = measure([({ type, field }) => (type === mutationType && !field.name.startsWith('__') ? 1 : 0)]);
            }
          } catch {
            // The library gives up past 10,000 selections (fragments expanded), beyond what an
            // operation within the depth and cost limits holds: one that cannot be priced does not run.
            throw rejected();
          }
          if (mutations > QUERY_LIMITS.maxMutations || cost > QUERY_LIMITS.maxCost) throw rejected();
          try {
            await spend(contextValue.request, Math.ceil(cost / QUERY_LIMITS.costPerRequestUnit) - 1);
          } catch (error) {
            throw error instanceof AppError ? raisedByPlugin(error) : error;
          }
        },
      };
    },
  };
}
