import type { ApolloServerPlugin } from '@apollo/server';
import { getVariableValues } from 'graphql';
import { AppError } from '../errors/error-catalogue';
import { type RateLimitStatus, rateLimitUnits } from '../guard/rate-limiter';
import type { RequestGuard } from '../guard/request.guard';
import { type OperationPrice, logQueryLimitRefusal, priceOf, refusalOf } from './document-check';
import { byteBoundedLru } from './document-cache';
import { DOCUMENT_CACHE_LIMITS, QUERY_LIMITS } from '../limits';
import type { GraphqlContext } from './graphql-context';
import { thrownGraphqlError } from './graphql-error.formatter';

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

/**
 * Refuses, before anything runs, an operation over the query limits once its variables are known
 * (document-check.ts), and charges the rate limit `rateLimitUnits` of its calls, of which its
 * request paid 1 at the door (docs/security.md "Limits"). Prices are remembered per (document,
 * operation name, variables) in an LRU of DOCUMENT_CACHE_LIMITS.priceBytes. Every answer gets
 * {@link PriceExtensions}; every refusal by a query limit is logged.
 *
 * @param rateLimiter - the guard's `spend` and `statusOf` (guard/request.guard.ts).
 * @returns an Apollo plugin; a refusal is HTTP 400 GRAPHQL_VALIDATION_FAILED (priceRefusal in
 *   query-limits.ts), an exhausted rate limit HTTP 429 TOO_MANY_REQUESTS.
 */
export function costLimitPlugin({ spend, statusOf }: Pick<RequestGuard, 'spend' | 'statusOf'>): ApolloServerPlugin<GraphqlContext> {
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
          if ('cost' in price) cost = { requestedQueryCost: price.cost, maximumQueryCost: QUERY_LIMITS.maxCost, rateLimitUnits: rateLimitUnits(price.calls) };
          const refusal = refusalOf(price);
          if (refusal) throw thrownGraphqlError(refusal);
          try {
            await spend(contextValue.request, (cost?.rateLimitUnits ?? 1) - 1);
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
