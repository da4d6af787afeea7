import { GraphQLError, OperationTypeNode, type ValidationRule } from 'graphql';

/** For the HTTP transport only: subscriptions need the WebSocket on `/graphql` (docs/graphql.md "Requests"). */
export const refuseSubscriptionsOverHttp: ValidationRule = (context) => ({
  OperationDefinition(node) {
    if (node.operation !== OperationTypeNode.SUBSCRIPTION) return;
    context.reportError(
      new GraphQLError('Subscription operations are not served over HTTP: open a WebSocket on /graphql (graphql-transport-ws protocol) for them.', {
        nodes: node,
      }),
    );
  },
});
