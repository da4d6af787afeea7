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
import type { ApiKeyService } from '../auth/api-key.service';
import type { PetPubSub } from '../events/pet-event.bus';
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
import { refuseSubscriptionsOverHttp } from './subscriptions-over-http.rule';

/** What the GraphQL surface needs. */
export interface GraphqlPluginOptions {
  /** The pet operations, shared with the REST surface. */
  petService: PetService;
  /** The guard of every operation (its onRequest hook), which also charges an operation by its calls and tells where its rate limit stands. */
  guard: RequestGuard;
  /** Production hides field suggestions from error messages. */
  production: boolean;
  /** The shell command that gets a key on this set-up (the development key file, or the apikey CLI), for the playground's hints. */
  keyCommand: string;
  /** Subscriptions over WebSocket on `/graphql` (docs/subscriptions.md). */
  subscriptions: {
    /** Where `petCreated` listens: the pet event bus. */
    pubSub: PetPubSub;
    /** The guard, for connections and subscriptions. */
    guard: Guard;
    /** The guard's key checks and cache, for re-checking open connections. */
    apiKeys: ApiKeyService;
    metrics: Metrics;
    /** The client's address of an upgrade request, with the app's proxy trust (TRUST_PROXY). */
    clientAddressOf: (request: IncomingMessage) => string;
    /** How often (ms) open connections re-check their key. */
    keyRecheckMs: number;
  };
}

/**
 * Serves GraphQL at `/graphql` (GET and POST) through Apollo Server, every request behind the
 * guard; errors before Apollo runs get a GraphQL-shaped body, errors inside it are formatted from
 * the catalogue. A browser's page visit gets the GraphiQL playground without a key (`./playground`).
 * A WebSocket upgrade runs subscriptions (`./subscription.server`) with the same schema, guard and
 * document limits. Every answer's `extensions` tell its price and where the rate limit stands
 * (PriceExtensions in `./cost-limit.plugin`). Apollo stops when the Fastify app closes.
 */
export const graphqlPlugin: FastifyPluginAsync<GraphqlPluginOptions> = async (app, { petService, guard, production, keyCommand, subscriptions }) => {
  const armor = armorSettings(production);
  const schema = await buildPetStoreSchema(petService, subscriptions.pubSub);
  const apollo = new ApolloServer<GraphqlContext>({
    // Operations run compiled by graphql-jit (bench/README.md "What makes it fast"), through Apollo's gateway interface.
    gateway: jitExecutorGateway(schema, {
      maxBytes: DOCUMENT_CACHE_LIMITS.compiledOperationBytes,
      onFallback: ({ operationName, reason }) => app.log.warn({ operationName, reason }, 'GraphQL operation runs uncompiled'),
    }),
    formatError: createGraphqlErrorFormatter((error) => app.log.error({ err: error }, 'unexpected GraphQL error')),
    // Every caller has passed the guard, so introspection is for authenticated callers only.
    introspection: true,
    ...armor,
    validationRules: [...armor.validationRules, refuseSubscriptionsOverHttp],
    parseOptions: PARSE_OPTIONS,
    includeStacktraceInErrorResponses: false,
    allowBatchedHttpRequests: false,
    // docs/security.md "CSRF": the bearer key every operation needs proves a preflight too.
    csrfPrevention: { requestHeaders: [...CSRF_PREVENTION.requestHeaders] },
    // main.ts owns SIGTERM/SIGINT: Apollo stops when the Fastify app closes, after the requests in flight.
    stopOnTerminationSignals: false,
    // Each distinct query is parsed and validated once, kept in a store bounded in bytes, source text included (docs/security.md "Limits").
    documentStore: apolloCache(DOCUMENT_CACHE_LIMITS.documentStoreBytes, documentBytes),
    // Apollo's shared cache: here only automatic persisted queries use it (query texts by hash).
    cache: apolloCache(DOCUMENT_CACHE_LIMITS.persistedQueryBytes, textBytes),
    // Speed (bench/): no cache-control hints (that plugin wraps every field resolver; answers are
    // no-store anyway), no usage reporting or inline tracing.
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
  // Refused before Apollo runs (401, 413, 415, the guard's 429): the answer still tells where the rate limit stands.
  const sendError = (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const rateLimit = guard.statusOf(request);
    sendGraphqlError(error, request, reply, rateLimit && { rateLimit });
  };

  // Errors on /graphql get a GraphQL body; the playground's files keep the app's Error body.
  app.route({
    method: ['GET', 'POST'],
    url: '/graphql',
    bodyLimit: HTTP_LIMITS.graphqlBodyBytes,
    // HEAD would reach Apollo, which has no answer for it: it gets 405 like any other method.
    exposeHeadRoute: false,
    schema: { hide: true },
    // The playground first: it answers browsers' page visits without a key and leaves every other request to the guard.
    onRequest: [servePlaygroundToBrowsers, guard.hook],
    errorHandler: sendError,
    handler: fastifyApolloHandler(apollo, { context: async (request) => ({ caller: callerOf(request), request }) }),
  });
  rejectOtherMethods(app, '/graphql', ['GET', 'POST'], { errorHandler: sendError });
  serveSubscriptions(app, { ...subscriptions, schema, validationRules: armor.validationRules, log: app.log });
};
