import type { ApolloServerPlugin } from '@apollo/server';
import { Kind } from 'graphql';
import type { GraphqlContext } from './graphql-context';

/** Notes the operation on the HTTP request, for its log line and metrics (docs/operations.md "Logs"). */
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
