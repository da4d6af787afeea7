import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { getMainDefinition, relayStylePagination } from '@apollo/client/utilities';
import { type DocumentNode, Kind, OperationTypeNode } from 'graphql';
import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';

/**
 * The SHA-256 graphql-codegen's client preset wrote into a document (`persistedDocuments`, codegen.ts): its id in
 * gql/persisted-documents.json, the manifest the server trusts.
 * @throws Error for a document the preset did not make (it has no id, so a publishable key could not run it).
 */
function trustedDocumentHash(document: DocumentNode): string {
  const hash = (document as { __meta__?: { hash?: unknown } }).__meta__?.hash;
  if (typeof hash !== 'string') throw new Error('this document has no trusted document id: write it with graphql() from ./gql');
  return hash;
}

/**
 * graphql-ws's JSON replacer for a publishable key: a `subscribe` that carries its document's id (Apollo's
 * `persistedQuery` extension) goes without the document's text, as a publishable key must send it; graphql-ws requires
 * `query` to be a string, so it is empty.
 */
function sendIdsOnly(key: string, value: unknown): unknown {
  const payload = value as { extensions?: { persistedQuery?: unknown } } | null;
  return key === 'payload' && payload?.extensions?.persistedQuery ? { ...payload, query: '' } : value;
}

/**
 * An Apollo Client as a frontend sets it up: queries and mutations over HTTP, subscriptions over
 * WebSocket (graphql-ws), both with the API key; `petsConnection` pages merged in the cache. With a publishable key,
 * every operation is sent as its trusted document's id (Apollo's persisted query link), never as text
 * (docs/api-keys.md "Trusted documents"); with a secret key, as text.
 *
 * @param apiUrl - the server's origin, e.g. http://127.0.0.1:3000.
 * @returns the client, and graphql-ws's client (to wait for its connection and to close it).
 */
export function createApolloClient(apiUrl: string, apiKey: string): { apollo: ApolloClient; ws: Client } {
  const publishable = apiKey.startsWith('pst_pk_');
  const http = new HttpLink({ uri: `${apiUrl}/graphql`, headers: { Authorization: `Bearer ${apiKey}` } });
  const ws = createClient({
    url: `${apiUrl.replace(/^http/, 'ws')}/graphql`,
    // The key goes in connection_init: browsers cannot set headers on a WebSocket.
    connectionParams: { Authorization: `Bearer ${apiKey}` },
    ...(publishable && { jsonMessageReplacer: sendIdsOnly }),
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
  const transports = ApolloLink.split(isSubscription, new GraphQLWsLink(ws), http);
  // A publishable key (a browser's) sends ids, first in the chain so that HTTP and WebSocket operations both carry
  // them. A secret key (a server's, or the development key) sends the text, which every server runs: the preset hashes
  // its normalised print of a document, not the text Apollo Client sends, so automatic persisted queries would refuse it.
  const link = publishable ? new PersistedQueryLink({ generateHash: trustedDocumentHash }).concat(transports) : transports;
  const apollo = new ApolloClient({ link, cache });
  return { apollo, ws };
}
