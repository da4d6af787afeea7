import type { ApolloServerPlugin } from '@apollo/server';
import { getVariableValues } from 'graphql';
import type { Scope } from '../auth/api-key-policy';
import { AppError } from '../errors/error-catalogue';
import { type RateLimitStatus, rateLimitUnits } from '../guard/rate-limiter';
import type { RequestGuard } from '../guard/request.guard';
import { type OperationPrice, logQueryLimitRefusal, neededScopes, priceOf, pricedVariablesKey, refusalOf } from './document-check';
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

/** What running an operation takes: its price and the scopes of its root fields. */
interface OperationNeeds {
  price: OperationPrice;
  scopes: ReadonlySet<Scope | undefined>;
}

/**
 * Apollo plugin: refuses an operation its key lacks the scope for (docs/api-keys.md), or over the query limits, once its
 * variables are known, before anything runs; then charges its calls less the 1 its request paid at the door
 * (docs/security.md "Limits").
 */
export function costLimitPlugin({ spend, statusOf, authorize }: Pick<RequestGuard, 'spend' | 'statusOf' | 'authorize'>): ApolloServerPlugin<GraphqlContext> {
  // Price and scopes depend on document, operation name and its priced variables only (bench/README.md "What makes it
  // fast"): `@skip`/`@include` conditions are Boolean. An entry weighs its key alone: no document is kept.
  const needs = byteBoundedLru<OperationNeeds>(DOCUMENT_CACHE_LIMITS.priceBytes, () => 0);
  return {
    async requestDidStart() {
      let cost: PriceExtensions['cost'];
      return {
        async didResolveOperation({ request, document, schema, operation, contextValue, queryHash }) {
          if (!operation) return; // Apollo answers OPERATION_RESOLUTION_FAILURE
          const variables = request.variables ?? {};
          // Apollo answers BAD_USER_INPUT next, running nothing.
          const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
          if (coerced.errors) return;
          const key = `${queryHash}\u0000${request.operationName ?? ''}\u0000${pricedVariablesKey(operation, variables)}`;
          let need = needs.get(key);
          if (need === undefined) {
            need = {
              price: priceOf(schema, document, operation, request.operationName ?? undefined, variables),
              scopes: neededScopes(schema, document, operation, coerced.coerced),
            };
            needs.set(key, need);
          }
          try {
            authorize(contextValue.request, need.scopes);
          } catch (error) {
            throw error instanceof AppError ? thrownGraphqlError(error) : error;
          }
          const { price } = need;
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
