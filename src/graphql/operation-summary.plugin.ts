import type { ApolloServerPlugin } from '@apollo/server';
import { Kind, type OperationDefinitionNode } from 'graphql';
import { noteGraphqlOperation } from '../http/request-context';
import type { GraphqlContext } from './graphql-context';

/** `query pet,pets`: the operation type and its root fields, sorted. */
function labelOf(operation: OperationDefinitionNode): string {
  const fields = new Set<string>();
  for (const selection of operation.selectionSet.selections) {
    fields.add(selection.kind === Kind.FIELD ? selection.name.value : '...');
  }
  return `${operation.operation} ${[...fields].sort().join(',')}`;
}

/** Notes the operation on the HTTP request, for its log line and metrics (docs/operations.md "Logs"). */
export function operationSummaryPlugin(): ApolloServerPlugin<GraphqlContext> {
  // Apollo's document store hands the same parsed operation to every request that sends its document.
  const labels = new WeakMap<OperationDefinitionNode, string>();
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation, operationName, contextValue }) {
          if (!operation) return;
          let label = labels.get(operation);
          if (label === undefined) labels.set(operation, (label = labelOf(operation)));
          noteGraphqlOperation(contextValue.request, { ...(operationName && { name: operationName }), label });
        },
      };
    },
  };
}
