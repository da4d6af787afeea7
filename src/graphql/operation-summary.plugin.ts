import type { ApolloServerPlugin } from '@apollo/server';
import { Kind } from 'graphql';
import type { GraphqlContext } from './graphql-context';

/**
 * Apollo plugin: once the operation is known, notes on the HTTP request what it is (the
 * client's operation name, and its type with its root fields) for the request's log line and
 * metrics (docs/operations.md "Logs", "Metrics").
 */
export function operationSummaryPlugin(): ApolloServerPlugin<GraphqlContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, operationName, contextValue }) {
          if (!operation) return;
          const fields = new Set<string>();
          for (const selection of operation.selectionSet.selections) {
            fields.add(selection.kind === Kind.FIELD ? selection.name.value : '...');
          }
          contextValue.request.graphqlOperation = {
            ...(operationName && { name: operationName }),
            label: `${operation.operation} ${[...fields].sort().join(',')}`,
          };
        },
      };
    },
  };
}
