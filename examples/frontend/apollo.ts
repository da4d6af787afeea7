import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition, relayStylePagination } from '@apollo/client/utilities';
import { Kind, OperationTypeNode } from 'graphql';
import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';

/**
 * An Apollo Client as a frontend sets it up: queries and mutations over HTTP, subscriptions over
 * WebSocket (graphql-ws), both with the API key; `petsConnection` pages merged in the cache.
 *
 * @param apiUrl - the server's origin, e.g. http://127.0.0.1:3000.
 * @returns the client, and graphql-ws's client (to wait for its connection and to close it).
 */
export function createApolloClient(apiUrl: string, apiKey: string): { apollo: ApolloClient; ws: Client } {
  const http = new HttpLink({ uri: `${apiUrl}/graphql`, headers: { Authorization: `Bearer ${apiKey}` } });
  const ws = createClient({
    url: `${apiUrl.replace(/^http/, 'ws')}/graphql`,
    // The key goes in connection_init: browsers cannot set headers on a WebSocket.
    connectionParams: { Authorization: `Bearer ${apiKey}` },
    // Node 20 has no global WebSocket; in a browser, leave this out.
    webSocketImpl: WebSocket,
  });
  const isSubscription = ({ query }: ApolloLink.Operation) => {
    const definition = getMainDefinition(query);
    return definition.kind === Kind.OPERATION_DEFINITION && definition.operation === OperationTypeNode.SUBSCRIPTION;
  };
  const cache = new InMemoryCache({
    typePolicies: {
      Query: {
        fields: {
          // One list per `status` filter; `first` and `after` only page through it, so each page's
          // edges are appended to what the cache holds (fetchMore with `after: endCursor`).
          petsConnection: relayStylePagination(['status']),
        },
      },
    },
  });
  const apollo = new ApolloClient({ link: ApolloLink.split(isSubscription, new GraphQLWsLink(ws), http), cache });
  return { apollo, ws };
}
