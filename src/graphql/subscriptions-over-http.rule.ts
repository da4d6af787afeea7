import { GraphQLError, OperationTypeNode, type ValidationRule } from 'graphql';

/**
 * graphql-js validation rule for the HTTP transport (POST and GET `/graphql`): a document
 * holding a `subscription` operation is refused with HTTP 400 GRAPHQL_VALIDATION_FAILED.
 * Subscriptions (`petCreated`) belong on a streaming transport: the WebSocket on the same
 * `/graphql` (subscription.server.ts), which does not use this rule; over plain HTTP, where an
 * answer is one result, they stay refused, with a message that points there. docs/graphql.md
 * "Requests" and docs/subscriptions.md.
 *
 * @returns (per document) a visitor that reports one error per subscription operation.
 */
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
