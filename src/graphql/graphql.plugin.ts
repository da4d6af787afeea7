import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { fastifyApolloHandler } from '@as-integrations/fastify';
import type { FastifyPluginAsync, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { createGraphqlErrorFormatter, sendGraphqlError } from '../errors/graphql-error.formatter';
import { HTTP_LIMITS } from '../http/http-limits';
import { rejectOtherMethods } from '../http/method-not-allowed';
import type { PetResolver } from '../pets/pet.resolver';
import { operationSummaryPlugin } from './operation-summary.plugin';
import { registerPlayground } from './playground';
import { PARSE_OPTIONS, armorSettings, costLimitPlugin } from './query-limits';
import { buildPetStoreSchema } from './schema';
import { refuseSubscriptionsOverHttp } from './subscriptions-over-http.rule';

/** What each GraphQL operation can see of its HTTP request. */
export interface GraphqlContext {
  request: FastifyRequest;
}

/** What the GraphQL surface needs. */
export interface GraphqlPluginOptions {
  petResolver: PetResolver;
  /** The onRequest hooks guarding every operation: authentication and rate limiting. */
  guard: onRequestAsyncHookHandler[];
  /** Charges a request extra rate-limit units (by operation cost); throws 429, charging none, when fewer are left. */
  spend: (request: FastifyRequest, units: number) => Promise<void>;
  /** Production hides field suggestions from error messages. */
  production: boolean;
}

/**
 * Serves GraphQL at `/graphql` (GET and POST) through Apollo Server. Every request passes
 * the shared auth hook first; errors before Apollo runs get a GraphQL-shaped body, errors
 * inside it are formatted from the catalogue. Apollo stops when the Fastify app closes.
 * A browser visiting `GET /graphql` (Accept prefers text/html, no `query` parameter) gets the
 * GraphiQL playground instead, without an API key (see `./playground`); the GraphQL requests
 * the playground sends are ordinary requests and pass the auth hook.
 */
export const graphqlPlugin: FastifyPluginAsync<GraphqlPluginOptions> = async (app, { petResolver, guard, spend, production }) => {
  const armor = armorSettings(production);
  const apollo = new ApolloServer<GraphqlContext>({
    schema: await buildPetStoreSchema(petResolver),
    formatError: createGraphqlErrorFormatter((error) => app.log.error({ err: error }, 'unexpected GraphQL error')),
    // Every caller has passed the auth hook, so introspection is for authenticated callers only.
    introspection: true,
    ...armor,
    validationRules: [...armor.validationRules, refuseSubscriptionsOverHttp],
    parseOptions: PARSE_OPTIONS,
    includeStacktraceInErrorResponses: false,
    allowBatchedHttpRequests: false,
    csrfPrevention: true,
    // main.ts owns SIGTERM/SIGINT: Apollo stops when the Fastify app closes, after the requests in flight.
    stopOnTerminationSignals: false,
    // Speed (bench/): no cache-control hints (that plugin wraps every field resolver; answers are
    // no-store anyway), no usage reporting or inline tracing. Apollo's parsed-document cache
    // stays on (its default), so each distinct query is parsed and validated once.
    plugins: [
      ...armor.plugins,
      costLimitPlugin(spend),
      operationSummaryPlugin(),
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
    ],
  });
  await apollo.start();
  app.addHook('onClose', () => apollo.stop());

  const servePlaygroundToBrowsers = await registerPlayground(app);

  app.setErrorHandler(sendGraphqlError);
  app.route({
    method: ['GET', 'POST'],
    url: '/graphql',
    bodyLimit: HTTP_LIMITS.graphqlBodyBytes,
    // HEAD would reach Apollo, which has no answer for it: it gets 405 like any other method.
    exposeHeadRoute: false,
    schema: { hide: true },
    // The playground first: it answers browsers' page visits without a key and leaves every other request to the auth hook.
    onRequest: [servePlaygroundToBrowsers, ...guard],
    handler: fastifyApolloHandler(apollo, { context: async (request) => ({ request }) }),
  });
  rejectOtherMethods(app, '/graphql', ['GET', 'POST']);
};
