import type { ApolloServerPlugin } from '@apollo/server';
import type { FastifyRequest } from 'fastify';
import { OperationTypeNode, getVariableValues } from 'graphql';
import { type ComplexityEstimator, fieldExtensionsEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';
import { AppError } from '../errors/error-catalogue';
import type { GraphqlContext } from './graphql-context';
import { raisedByPlugin } from './graphql-error.formatter';
import { QUERY_LIMITS, QUERY_REJECTED_MESSAGE } from './query-limits';

/**
 * Rejects an operation that creates more than {@link QUERY_LIMITS}.maxMutations times or costs
 * more than {@link QUERY_LIMITS}.maxCost, once its variables are known (so `pets(limit: $n)` is
 * priced with the real `$n`, and `@skip`/`@include` are applied), and charges the rate limit for
 * the whole operation: one request per started {@link QUERY_LIMITS}.costPerRequestUnit of cost,
 * of which the request already paid 1 when it came in. This runs in `didResolveOperation`, before
 * anything executes, so a refused operation reads and writes nothing. An operation that cannot be
 * priced (fragments that expand past 10,000 selections) is refused too. Costs come from the schema's
 * `complexity` extensions (type-graphql's `complexity` option, see databaseFieldCost in query-limits.ts),
 * 1 per field otherwise.
 *
 * @param spend - charges the caller's rate limit that many more requests, or throws the AppError
 *   TOO_MANY_REQUESTS without charging when fewer are left (see http/rate-limit.ts).
 * @returns an Apollo plugin; a rejection is HTTP 400 GRAPHQL_VALIDATION_FAILED, an exhausted
 *   rate limit HTTP 429 TOO_MANY_REQUESTS.
 */
export function costLimitPlugin(
  spend: (request: FastifyRequest, units: number) => Promise<void>,
): ApolloServerPlugin<GraphqlContext> {
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
