import type { ApolloServerPlugin } from '@apollo/server';
import { getVariableValues } from 'graphql';
import { AppError } from '../errors/error-catalogue';
import { type RateLimitStatus, rateLimitUnits } from '../guard/rate-limiter';
import type { RequestGuard } from '../guard/request.guard';
import { type OperationPrice, logQueryLimitRefusal, priceOf, pricedVariablesKey, refusalOf } from './document-check';
import { byteBoundedLru } from './document-cache';
import { DOCUMENT_CACHE_LIMITS, QUERY_LIMITS } from '../limits';
import type { GraphqlContext } from './graphql-context';
import { thrownGraphqlError } from './graphql-error.formatter';

/** The top-level `extensions` of every GraphQL answer over HTTP (docs/security.md "Limits"). */
export interface PriceExtensions {
  /** Absent for a document that does not parse or validate. */
  cost?: {
    /** 400 for `pets(limit: 100) { id name categoryId status }`. */
    requestedQueryCost: number;
    maximumQueryCost: number;
    /** Charged in full when it runs; a refused one spends only its request's 1. */
    rateLimitUnits: number;
  };
  rateLimit?: RateLimitStatus;
}

/**
 * Apollo plugin: refuses an operation over the query limits once its variables are known, before
 * anything runs, and charges its calls less the 1 its request paid at the door (docs/security.md "Limits").
 */
export function costLimitPlugin({ spend, statusOf }: Pick<RequestGuard, 'spend' | 'statusOf'>): ApolloServerPlugin<GraphqlContext> {
  // A price depends on document, operation name and its priced variables only (bench/README.md "What makes it fast").
  // An entry weighs its key alone: no document is kept.
  const prices = byteBoundedLru<OperationPrice>(DOCUMENT_CACHE_LIMITS.priceBytes, () => 0);
  return {
    async requestDidStart() {
      let cost: PriceExtensions['cost'];
      return {
        async didResolveOperation({ request, document, schema, operation, contextValue, queryHash }) {
          if (!operation) return; // Apollo answers OPERATION_RESOLUTION_FAILURE
          const variables = request.variables ?? {};
          // Apollo answers BAD_USER_INPUT next, running nothing.
          if (getVariableValues(schema, operation.variableDefinitions ?? [], variables).errors) return;
          const key = `${queryHash}\u0000${request.operationName ?? ''}\u0000${pricedVariablesKey(operation, variables)}`;
          let price = prices.get(key);
          if (price === undefined) {
            price = priceOf(schema, document, operation, request.operationName ?? undefined, variables);
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
