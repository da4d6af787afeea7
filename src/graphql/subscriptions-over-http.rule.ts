import { GraphQLError, OperationTypeNode, type ValidationRule } from 'graphql';

/**
 * graphql-js validation rule for the HTTP transport (POST and GET `/graphql`): a document
 * holding a `subscription` operation is refused with HTTP 400 GRAPHQL_VALIDATION_FAILED.
 * Without it, graphql-js (16) lets a subscription through validation even though the schema
 * has no Subscription type, and execution fails as an unexpected INTERNAL_SERVER_ERROR.
 * Subscriptions, when the schema has them, belong on a streaming transport (WebSocket), whose
 * server does not use this rule; over plain HTTP they stay refused. README "GraphQL".
 *
 * @returns (per document) a visitor that reports one error per subscription operation.
 */
export const refuseSubscriptionsOverHttp: ValidationRule = (context) => ({
  OperationDefinition(node) {
    if (node.operation !== OperationTypeNode.SUBSCRIPTION) return;
    context.reportError(new GraphQLError('Subscription operations are not served over HTTP: send a query or a mutation.', { nodes: node }));
  },
});
