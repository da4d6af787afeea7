import type { IncomingMessage } from 'node:http';
import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { fastifyApolloHandler } from '@as-integrations/fastify';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { PetEventService } from '../events/pet-event.service';
import type { Guard } from '../guard/guard';
import { type RequestGuard, callerOf } from '../guard/request.guard';
import { rejectOtherMethods } from '../http/method-not-allowed';
import { DOCUMENT_CACHE_LIMITS, HTTP_LIMITS } from '../limits';
import type { Metrics } from '../observability/metrics.registry';
import type { PetService } from '../pets/pet.service';
import { costLimitPlugin } from './cost-limit.plugin';
import { CSRF_PREVENTION } from './csrf-prevention';
import { apolloCache, documentBytes, textBytes } from './document-cache';
import type { GraphqlContext } from './graphql-context';
import { createGraphqlErrorFormatter, sendGraphqlError } from './graphql-error.formatter';
import { jitExecutorGateway } from './jit-executor.gateway';
import { legacyJsonStatusPlugin } from './legacy-json-status.plugin';
import { operationSummaryPlugin } from './operation-summary.plugin';
import { registerPlayground } from './playground';
import { PARSE_OPTIONS, armorSettings } from './query-limits';
import { buildPetStoreSchema } from './schema';
import { serveSubscriptions } from './subscription.server';
import { unavailableStatusPlugin } from './unavailable-status.plugin';
import type { TrustedDocuments } from './trusted-documents';
import { trustedDocumentsHook } from './trusted-documents.hook';
import { refuseSubscriptionsOverHttp } from './subscriptions-over-http.rule';
import { SURFACE_PATHS } from '../surface-paths';
import type { FeedFollowers } from '../following/feed-followers';

/** What the GraphQL surface needs. */
export interface GraphqlPluginOptions {
  petService: PetService;
  guard: RequestGuard;
  /** Hides field suggestions from error messages. */
  production: boolean;
  /** Tracing is on (tracing.ts tracingWanted): each operation within a traced request gets a span. */
  traced: boolean;
  /** The shell command that gets a key on this set-up, for the playground's hints. */
  keyCommand: string;
  /** The documents a publishable key may run, by id (docs/api-keys.md "Trusted documents"). */
  trustedDocuments: TrustedDocuments;
  /** Subscriptions over WebSocket on `/graphql` (docs/subscriptions.md). */
  subscriptions: {
    /** The change feed's operations (REST's too), which every subscription follows. */
    events: PetEventService;
    guard: Guard;
    /** Every stream of the feed, SSE and WebSocket: each admitted connection is one. */
    followers: FeedFollowers;
    metrics: Metrics;
    clientAddressOf: (request: IncomingMessage) => string;
    /** ServiceState.onStopAccepting: where the WebSockets' close is registered. */
    onStopAccepting: (close: () => Promise<void>) => void;
  };
}

/** GraphQL at `/graphql` (GET, POST, WebSocket) through Apollo Server, behind the guard (docs/graphql.md). */
export const graphqlPlugin: FastifyPluginAsync<GraphqlPluginOptions> = async (
  app,
  { petService, guard, production, traced, keyCommand, trustedDocuments, subscriptions },
) => {
  const armor = armorSettings(production);
  const schema = await buildPetStoreSchema(petService);
  const apollo = new ApolloServer<GraphqlContext>({
    // graphql-jit through Apollo's gateway interface (bench/README.md "What makes it fast").
    gateway: jitExecutorGateway(schema, {
      maxBytes: DOCUMENT_CACHE_LIMITS.compiledOperationBytes,
      onFallback: ({ operationName, reason }) => app.log.warn({ operationName, reason }, 'GraphQL operation runs uncompiled'),
      traced,
    }),
    formatError: createGraphqlErrorFormatter((error) => app.log.error({ err: error }, 'unexpected GraphQL error')),
    // Safe: every caller has passed the guard.
    introspection: true,
    ...armor,
    validationRules: [...armor.validationRules, refuseSubscriptionsOverHttp],
    parseOptions: PARSE_OPTIONS,
    includeStacktraceInErrorResponses: false,
    allowBatchedHttpRequests: false,
    // docs/security.md "CSRF": the bearer key every operation needs proves a preflight too.
    csrfPrevention: { requestHeaders: [...CSRF_PREVENTION.requestHeaders] },
    // main.ts owns SIGTERM/SIGINT: Apollo stops with the Fastify app, after the requests in flight.
    stopOnTerminationSignals: false,
    // Bounded in bytes, source text included (docs/security.md "Limits").
    documentStore: apolloCache(DOCUMENT_CACHE_LIMITS.documentStoreBytes, documentBytes),
    // Only automatic persisted queries use Apollo's shared cache here.
    cache: apolloCache(DOCUMENT_CACHE_LIMITS.persistedQueryBytes, textBytes),
    // Cache control off for speed: it wraps every field resolver, and answers are no-store anyway.
    plugins: [
      ...armor.plugins,
      costLimitPlugin(guard),
      operationSummaryPlugin(),
      legacyJsonStatusPlugin(),
      unavailableStatusPlugin(),
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
    ],
  });
  await apollo.start();
  app.addHook('onClose', () => apollo.stop());

  const servePlaygroundToBrowsers = await registerPlayground(app, keyCommand);
  // Refused before Apollo runs: the answer still tells where the rate limit stands.
  const sendError = (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const rateLimit = guard.statusOf(request);
    sendGraphqlError(error, request, reply, rateLimit && { rateLimit });
  };

  // Errors on /graphql get a GraphQL body; the playground's files keep the app's Error body.
  app.route({
    method: ['GET', 'POST'],
    url: SURFACE_PATHS.graphql,
    bodyLimit: HTTP_LIMITS.graphqlBodyBytes,
    // Apollo has no answer for HEAD: 405 like any other method.
    exposeHeadRoute: false,
    schema: { hide: true },
    // The playground first: browsers' page visits need no key.
    onRequest: [servePlaygroundToBrowsers, guard.hook],
    // With the caller's key known: a trusted document's id becomes its text before Apollo reads the request.
    preHandler: trustedDocumentsHook(trustedDocuments),
    errorHandler: sendError,
    handler: fastifyApolloHandler(apollo, { context: async (request) => ({ caller: callerOf(request), request }) }),
  });
  rejectOtherMethods(app, SURFACE_PATHS.graphql, ['GET', 'POST'], { errorHandler: sendError });
  serveSubscriptions(app, { ...subscriptions, schema, trustedDocuments, validationRules: armor.validationRules, log: app.log });
};
