import type { ApolloServerPlugin } from '@apollo/server';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import {
  type DocumentNode,
  GraphQLIncludeDirective,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
  GraphQLSkipDirective,
  type OperationDefinitionNode,
  OperationTypeNode,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  getVariableValues,
  visit,
} from 'graphql';
import { type ComplexityEstimator, fieldExtensionsEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';
import { AppError } from '../errors/error-catalogue';
import { type RateLimitStatus, rateLimitUnits } from '../http/rate-limit';
import { byteBoundedLru } from './document-cache';
import type { GraphqlContext } from './graphql-context';
import { thrownGraphqlError } from './graphql-error.formatter';
import { priceRefusal, queryLimitOf, unpriceableRefusal } from './query-limits';
import { DOCUMENT_CACHE_LIMITS, QUERY_LIMITS } from '../limits';

/** What an operation costs: its cost (limit QUERY_LIMITS.maxCost), its creates (limit QUERY_LIMITS.maxMutations) and its calls to the pet store (what the rate limit charges). */
export type OperationPrice = { cost: number; mutations: number; calls: number } | { unpriceable: true };

/**
 * The price of an operation: its cost (schema `complexity` extensions, `__typename` and the other
 * meta fields 0 of their own, 1 per other field), its number of root fields that run, which are
 * its calls to the pet store (each a page, a lookup, a create or a subscription; aliases and
 * fragments included, `@skip`/`@include` applied, meta fields left out), and of those its
 * Mutation root fields; or `unpriceable` when graphql-query-complexity gives up (past
 * QUERY_LIMITS.maxPricedSelections selections with fragments expanded, beyond what an operation
 * within the depth and cost limits holds). A `@skip`/`@include` whose condition cannot be read (`if: $v` with `$v` null)
 * counts its selection: execution then answers the error graphql-js gives. Used for HTTP operations (below) and subscriptions (subscription.server.ts).
 *
 * @returns `{ cost, mutations, calls }`, cost in the units of QUERY_LIMITS.maxCost, or `{ unpriceable: true }`.
 */
export function priceOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  operationName: string | undefined,
  variables: Record<string, unknown>,
): OperationPrice {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]);
  const price = (query: DocumentNode) => {
    const measure = (estimators: ComplexityEstimator[]) =>
      getComplexity({ schema, query, operationName, variables, estimators, maxQueryNodes: QUERY_LIMITS.maxPricedSelections });
    const cost = measure([metaFieldEstimator, fieldExtensionsEstimator(), simpleEstimator({ defaultComplexity: 1 })]);
    // Each root field counts 1 whatever it selects; nothing below a root field is a call.
    const calls = measure([({ type, field }) => (roots.has(type as GraphQLObjectType) && !META_FIELDS.has(field) ? 1 : 0)]);
    return { cost, calls, mutations: operation.operation === OperationTypeNode.MUTATION ? calls : 0 };
  };
  try {
    return price(document);
  } catch {
    // A `@skip`/`@include` whose `if` does not coerce (a null variable) throws here: priced with
    // every condition taken as true, the operation runs, and execution reports it as graphql-js does.
  }
  try {
    return price(visit(document, { Directive: (node) => (CONDITIONS.has(node.name.value) ? null : undefined) }));
  } catch {
    return { unpriceable: true };
  }
}

/** The meta fields every type or the Query type answers from the schema itself: `__typename`, `__schema`, `__type`. */
const META_FIELDS: ReadonlySet<GraphQLField<unknown, unknown>> = new Set([TypeNameMetaFieldDef, SchemaMetaFieldDef, TypeMetaFieldDef]);

/**
 * The price of a meta field: nothing of its own, its selection as usual. So `__typename`, which
 * Apollo Client's cache adds to every selection set and which is answered from the type without a
 * resolver, costs 0; `__schema` and `__type` cost what they select, 1 per field as any field
 * answered from memory (the standard introspection query 219), which keeps hand-written
 * introspection documents (exempt from the depth limit) bounded by the cost limit too.
 */
const metaFieldEstimator: ComplexityEstimator = ({ field, childComplexity }) => (META_FIELDS.has(field) ? childComplexity : undefined);

/** The directives that may leave a selection out: `@skip` and `@include`. */
const CONDITIONS: ReadonlySet<string> = new Set([GraphQLSkipDirective.name, GraphQLIncludeDirective.name]);

/**
 * Logs, at info, that one of the query limits refused an operation (docs/operations.md "Logs"): the limit,
 * its maximum, what the operation held when measured (its cost, its creates), its cost when it was
 * priced, and the message the client got. For HTTP operations (below) and subscriptions
 * (subscription.server.ts).
 *
 * @param log - the request's (or the server's) logger.
 * @param errors - the request errors of one operation; the first that a limit raised is logged,
 *   and nothing when none was (see queryLimitOf in query-limits.ts).
 * @param cost - the operation's cost, in units of QUERY_LIMITS.maxCost, when it was priced (a
 *   refusal by depth, aliases, directives or tokens comes before any price).
 */
export function logQueryLimitRefusal(log: FastifyBaseLogger, errors: readonly Error[], cost?: number): void {
  for (const error of errors) {
    const refusal = queryLimitOf(error);
    if (!refusal) continue;
    const { limit, maximum, found } = refusal;
    const queryLimit = { limit, maximum, ...(found !== undefined && { found }) };
    log.info({ queryLimit, ...(cost !== undefined && { cost }), reason: error.message }, 'GraphQL operation refused by a query limit');
    return;
  }
}

/**
 * What every GraphQL answer over HTTP tells of its price (docs/security.md "Limits"), in its top-level
 * `extensions`, success and errors alike, in both response formats.
 */
export interface PriceExtensions {
  /** The operation's price, once it has been priced (not for a document that does not parse or validate). */
  cost?: {
    /** Its cost against the query cost limit: 400 for `pets(limit: 100) { id name categoryId status }`. */
    requestedQueryCost: number;
    /** The query cost limit, {@link QUERY_LIMITS}.maxCost. */
    maximumQueryCost: number;
    /** What it costs against the rate limit (`rateLimitUnits` of its calls), charged in full when it runs; a refused one spends only its request's 1. */
    rateLimitUnits: number;
  };
  /** Where the client's rate limit stands after this request: the numbers of its `RateLimit` header fields, when it has them. */
  rateLimit?: RateLimitStatus;
}

/** What the price plugin needs from the rate limiter (http/rate-limit.ts). */
export interface RateLimiterAccess {
  /**
   * Charges the caller's rate limit that many more units, or throws the AppError
   * TOO_MANY_REQUESTS without charging when fewer are left.
   */
  spend: (request: FastifyRequest, units: number) => Promise<void>;
  /** Where the caller's rate limit stands, as the answer's RateLimit header fields say it. */
  statusOf: (request: FastifyRequest) => RateLimitStatus | undefined;
}

/**
 * Rejects an operation that creates more than {@link QUERY_LIMITS}.maxMutations times or costs
 * more than {@link QUERY_LIMITS}.maxCost, once its variables are known (so `pets(limit: $n)` is
 * priced with the real `$n`, and `@skip`/`@include` are applied), and charges the rate limit for
 * the whole operation: `rateLimitUnits` of its calls (http/rate-limit.ts), one per root field as
 * REST charges one per request, of which the request already paid 1 when it came in. This runs in `didResolveOperation`, before
 * anything executes, so a refused operation reads and writes nothing. An operation that cannot be
 * priced (fragments that expand past {@link QUERY_LIMITS}.maxPricedSelections selections) is
 * refused too. Each (document, operation name, variables) is priced once and remembered (an LRU
 * of DOCUMENT_CACHE_LIMITS.priceBytes). Costs come from the schema's `complexity` extensions
 * (type-graphql's `complexity` option, see databaseFieldCost in query-limits.ts), 1 per field
 * otherwise. Every refusal by a query limit, these and the document limits (depth, aliases,
 * directives, tokens), is logged at info with {@link logQueryLimitRefusal}. Every answer gets
 * {@link PriceExtensions} in its `extensions`: the price once known, and the rate limit's status.
 *
 * @param rateLimiter - the rate limiter's `spend` and `statusOf` (see http/rate-limit.ts).
 * @returns an Apollo plugin; a rejection is HTTP 400 GRAPHQL_VALIDATION_FAILED whose message names
 *   the limit, its maximum and the operation's figure (priceRefusal in query-limits.ts), an
 *   exhausted rate limit HTTP 429 TOO_MANY_REQUESTS.
 */
export function costLimitPlugin({ spend, statusOf }: RateLimiterAccess): ApolloServerPlugin<GraphqlContext> {
  // The price of an operation depends on its document, its name and its variables only: each
  // combination is priced once (bench/README.md "What makes it fast"), `unpriceable` included. An entry keeps its
  // key (the variables' JSON can be most of a 64 KiB body) and three numbers, no document.
  const prices = byteBoundedLru<OperationPrice>(DOCUMENT_CACHE_LIMITS.priceBytes, () => 0);
  return {
    async requestDidStart() {
      let cost: PriceExtensions['cost'];
      return {
        async didResolveOperation({ request, document, schema, operation, contextValue, queryHash }) {
          if (!operation) return; // Apollo answers OPERATION_RESOLUTION_FAILURE
          const key = `${queryHash}\u0000${request.operationName ?? ''}\u0000${JSON.stringify(request.variables ?? {})}`;
          let price = prices.get(key);
          if (price === undefined) {
            // Variables that do not fit the operation: Apollo answers BAD_USER_INPUT next, running nothing.
            if (getVariableValues(schema, operation.variableDefinitions ?? [], request.variables ?? {}).errors) return;
            price = priceOf(schema, document, operation, request.operationName ?? undefined, request.variables ?? {});
            prices.set(key, price);
          }
          if ('unpriceable' in price) throw thrownGraphqlError(unpriceableRefusal());
          cost = { requestedQueryCost: price.cost, maximumQueryCost: QUERY_LIMITS.maxCost, rateLimitUnits: rateLimitUnits(price.calls) };
          const refusal = priceRefusal(price);
          if (refusal) throw thrownGraphqlError(refusal);
          try {
            await spend(contextValue.request, cost.rateLimitUnits - 1);
          } catch (error) {
            throw error instanceof AppError ? thrownGraphqlError(error) : error;
          }
        },
        async didEncounterErrors({ errors, contextValue }) {
          logQueryLimitRefusal(contextValue.request.log, errors, cost?.requestedQueryCost);
        },
        async willSendResponse({ response, contextValue }) {
          if (response.body.kind !== 'single') return;
          const rateLimit = statusOf(contextValue.request);
          const extensions: PriceExtensions = { ...(cost && { cost }), ...(rateLimit && { rateLimit }) };
          if (extensions.cost || extensions.rateLimit) response.body.singleResult.extensions = { ...response.body.singleResult.extensions, ...extensions };
        },
      };
    },
  };
}
