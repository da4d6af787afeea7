import 'reflect-metadata';
import proxyAddr from '@fastify/proxy-addr';
import fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { ApiKeyService } from './auth/api-key.service';
import { AuditTrail } from './audit/audit-trail';
import { keepsDevApiKey } from './auth/dev-api-key';
import { KeyChangeChannel } from './auth/key-change.channel';
import { type Config, ConfigError, DEV_API_KEY_PATH } from './config';
import type { Database } from './database/database';
import { startPetEventBus } from './events/pet-event.bus';
import { PetEventService } from './events/pet-event.service';
import { graphqlPlugin } from './graphql/graphql.plugin';
import { TrustedDocuments } from './graphql/trusted-documents';
import { createGuard } from './guard/guard';
import { createRateLimiter } from './guard/rate-limiter';
import { guardRequests } from './guard/request.guard';
import { answerConditionalGets } from './http/conditional-get.hook';
import { answerClientError, refuseUnknownRoute, sendError } from './http/error.handler';
import { FeedFollowers } from './following/feed-followers';
import { closeConnectionsOnceNotAccepting } from './http/graceful-shutdown';
import { parseJsonExactly } from './http/json-body.parser';
import { endJsonWithNewline } from './http/json-newline.hook';
import { landingPageRoutes } from './http/landing-page.routes';
import { provideRequestContext } from './http/request-context';
import { refuseBadRequestHeads } from './http/request-head.hook';
import { RequestLogController, observeRequests, requestIdOf } from './http/request-observer.hook';
import { hardenResponses } from './http/security-headers';
import { purgeExpiredKeys } from './idempotency/idempotency-purge';
import { IdempotencyService } from './idempotency/idempotency.service';
import { FOLLOWER_LIMITS, HTTP_LIMITS } from './limits';
import { DeprecationTracker } from './observability/deprecation.tracker';
import { healthRoutes } from './observability/health.routes';
import { createLogger } from './observability/logger';
import { type Metrics, createMetrics } from './observability/metrics.registry';
import { RedisHealthMonitor } from './observability/redis-health.monitor';
import { RedisConnections } from './redis/redis.connections';
import { ServiceState } from './observability/service-state';
import { tracingWanted } from './observability/tracing';
import { PetRepository } from './pets/pet.repository';
import { PetService } from './pets/pet.service';
import { auditedGuard } from './rest/admin-routes';
import { auditEventController } from './rest/audit-event.controller';
import { apiKeyController } from './rest/api-key.controller';
import { ApiKeyAdministration } from './auth/api-key-admin.service';
import { webhookEndpointController } from './rest/webhook-endpoint.controller';
import { credentialsController } from './rest/credentials.controller';
import { describeWithOpenapi, serveOpenapi } from './rest/openapi.plugin';
import { eventController } from './rest/event.controller';
import { petController } from './rest/pet.controller';
import { SURFACE_PATHS } from './surface-paths';
import { WebhookEndpointRepository } from './webhooks/webhook-endpoint.repository';
import { WebhookEndpointService } from './webhooks/webhook-endpoint.service';
import { WebhookDispatcher, type WebhookFollowing } from './webhooks/webhook.dispatcher';
import { createWebhookMetrics } from './webhooks/webhook.metrics';
import { webhookDeliveryController } from './rest/webhook-delivery.controller';
import { WebhookAttemptRepository } from './webhooks/webhook-attempt.repository';
import { purgeWebhookAttempts } from './webhooks/webhook-attempt-purge';
import { WebhookDeliveryService } from './webhooks/webhook-delivery.service';

/** Fastify's `trustProxy`: a hop count trusts the nearest `n` proxies. */
function trustProxyOption(trust: Config['trustProxy']): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return trust === false ? false : [...trust];
}

/** A WebSocket upgrade's client address, trusted as `request.ip` is, so both share the per-address limit. */
function clientAddressOf(trust: Config['trustProxy']): (request: IncomingMessage) => string {
  const option = trustProxyOption(trust);
  const trusted = option === false ? () => false : option === true ? () => true : option;
  return (request) => proxyAddr(request, trusted);
}

/** What the app is built from. */
export interface AppDependencies {
  /** From `loadConfig`: buildApp adds no defaults. */
  config: Config;
  /** Opened (openDatabase), migrations run. */
  database: Database;
  logger?: Logger;
  metrics?: Metrics;
  /** `draining` makes `/readyz` fail (shutdown). */
  state?: ServiceState;
  /** The guard's keys, to share their cache (revocations) with the caller; by default {@link createApiKeys}'. */
  apiKeys?: ApiKeyService;
}

/**
 * The API keys of `database` as `config` caches them (API_KEY_CACHE_SECONDS): one instance for the app and whoever must
 * share its cache (a revocation through it is refused at once), e.g. main.ts's development key. A failed write of a
 * key's last use is logged to `log` at warn.
 */
export function createApiKeys(config: Config, database: Database, log?: FastifyBaseLogger): ApiKeyService {
  return new ApiKeyService(database, {
    cacheTtlMs: config.apiKeyCacheSeconds * 1000,
    onAuditError: (error) => log?.warn({ err: error }, "cannot record an API key's last use now"),
  });
}

/**
 * With Redis, `apiKeys` announces the keys it revokes or rolls on the key change channel and forgets those announced
 * by other processes (docs/api-keys.md "Revocation"), until `app` closes; without Redis, nothing changes.
 */
function announceKeyChanges(app: FastifyInstance, config: Config, apiKeys: ApiKeyService, redis?: RedisConnections): void {
  if (!redis) return;
  const keyChanges = new KeyChangeChannel(redis, config.redis.keyChangesChannel, app.log);
  keyChanges.listen(apiKeys.changes);
  apiKeys.changes.announceTo(keyChanges);
  app.addHook('onClose', () => apiKeys.changes.announceTo(null));
}

/**
 * The webhook metrics, and with WEBHOOK_DELIVERIES this instance's dispatcher (docs/webhooks.md): started once the app
 * listens (a start that failed before delivers nothing), woken by the feed (`following`), stopped as the drain starts (an
 * attempt cut then is made again, with the same webhook-id, by another instance or the next start).
 */
function deliverWebhooks(app: FastifyInstance, config: Config, database: Database, metrics: Metrics, state: ServiceState, following: WebhookFollowing): void {
  const webhookMetrics = createWebhookMetrics(metrics.registry, new WebhookEndpointRepository(database));
  if (!config.webhooks.deliveries) return;
  const { retrySchedule } = config.webhooks;
  const dispatcher = new WebhookDispatcher({ database, rules: config.webhooks, retrySchedule, log: app.log, metrics: webhookMetrics, following });
  app.addHook('onListen', async () => dispatcher.start());
  // As the drain starts, not after it: an attempt started during it would be cut anyway and sent again by another
  // instance. With the app's own close too (tests close it without a drain).
  state.onDrain(() => dispatcher.close());
  state.onStopAccepting(() => dispatcher.close());
}

/**
 * The trusted documents of TRUSTED_DOCUMENTS' manifests (docs/api-keys.md "Trusted documents"), read now.
 * @throws ConfigError naming the manifest and what is wrong with it, as a bad setting is refused.
 */
export function readTrustedDocuments(config: Config): TrustedDocuments {
  try {
    return TrustedDocuments.read(config.trustedDocumentManifests);
  } catch (error) {
    throw new ConfigError(`Invalid configuration: TRUSTED_DOCUMENTS: ${(error as Error).message}`);
  }
}

/** Builds the HTTP app, ready but not listening (docs/architecture.md); closing it leaves the database open. */
export async function buildApp({
  config,
  database,
  logger = createLogger(config.logLevel),
  metrics = createMetrics(),
  state = new ServiceState(),
  apiKeys = createApiKeys(config, database, logger),
}: AppDependencies): Promise<FastifyInstance> {
  const trustedDocuments = readTrustedDocuments(config);
  // So the instance is a plain FastifyInstance, not one generic over pino's Logger.
  const loggerInstance: FastifyBaseLogger = logger;
  const app = fastify({
    loggerInstance,
    logController: new RequestLogController(state),
    requestIdHeader: false,
    genReqId: requestIdOf,
    // The listener closes first, so requests still arriving are the last ones: served, not 503.
    return503OnClosing: false,
    trustProxy: trustProxyOption(config.trustProxy),
    // Rejections before routing (bad URL, malformed header) still get the Error body.
    frameworkErrors: sendError,
    clientErrorHandler: answerClientError,
    bodyLimit: HTTP_LIMITS.restBodyBytes,
    routerOptions: { maxParamLength: HTTP_LIMITS.maxParamLength },
    requestTimeout: HTTP_LIMITS.requestTimeoutMs,
    keepAliveTimeout: HTTP_LIMITS.keepAliveTimeoutMs,
    http: {
      maxHeaderSize: HTTP_LIMITS.maxHeaderBytes,
      // Node's own Host check answers with an empty body: refuseBadRequestHeads answers instead.
      requireHostHeader: false,
      headersTimeout: HTTP_LIMITS.requestTimeoutMs,
      connectionsCheckingInterval: HTTP_LIMITS.timeoutCheckIntervalMs,
    },
  });

  // First, so every hook after it has the request's context, and the request's budget starts at its arrival.
  provideRequestContext(app);
  await hardenResponses(app, config.corsOrigins);
  endJsonWithNewline(app);
  const traced = tracingWanted(config.tracing);
  observeRequests(app, metrics, traced);
  metrics.watchDatabase(database);
  closeConnectionsOnceNotAccepting(app, state);
  // What ServiceState closes as the listener stops accepting closes with the app too (tests close the app alone).
  app.addHook('preClose', () => state.stopAccepting());
  refuseBadRequestHeads(app);

  const idempotency = new IdempotencyService(database);
  const deprecations = new DeprecationTracker(metrics, app.log);
  // One command and one subscriber connection to Redis for every topic (rate limits, key changes, the feed's pokes), and
  // one judge of it (docs/failures.md "Redis"), connected before what uses them starts.
  const { url: redisUrl, onFailure } = config.redis;
  const redis = redisUrl ? new RedisConnections(redisUrl, app.log) : undefined;
  const redisHealth = redis ? new RedisHealthMonitor(redis.command, onFailure, app.log) : undefined;
  if (redis && redisHealth) {
    app.addHook('onClose', () => redis.close());
    app.addHook('onClose', () => redisHealth.close());
    await redisHealth.start();
    metrics.watchRedis(() => redisHealth.state === 'ok');
  }
  // The change feed; with Redis, instances poke each other so an event reaches all within milliseconds.
  const petEvents = await startPetEventBus({ database, redis, channel: config.redis.petFeedChannel, log: app.log });
  app.addHook('onClose', () => petEvents.close());
  metrics.watchFeed(() => ({
    position: petEvents.feed.position,
    followers: petEvents.feed.followerCount,
    leading: petEvents.sequencer.isLeader,
    stamped: petEvents.sequencer.stampedCount,
  }));
  const petService = new PetService(new PetRepository(database), idempotency, deprecations, petEvents);
  purgeExpiredKeys(app, idempotency);

  // JSON only (anything else is 415), parsed without rounding.
  app.removeContentTypeParser('text/plain');
  parseJsonExactly(app);
  app.setErrorHandler(sendError);
  app.setNotFoundHandler(refuseUnknownRoute);
  const limiter = createRateLimiter(config.rateLimit, redisHealth);
  const guard = createGuard(apiKeys, limiter);
  // After the JSON newline, so a tag covers the bytes sent; before the guard's hook, which gives a 304's unit back.
  answerConditionalGets(app);
  const requests = guardRequests(app, guard);
  announceKeyChanges(app, config, apiKeys, redis);
  await describeWithOpenapi(app, config);
  await app.register(petController, { prefix: SURFACE_PATHS.rest, petService, guard: requests.operationHook });
  // One service for the feed's operations, on both surfaces; one owner of every stream that follows it (docs/architecture.md "Following").
  const eventService = new PetEventService(petEvents.feed);
  const followers = new FeedFollowers({
    events: eventService,
    guard,
    authentication: apiKeys.authentication,
    keyChanges: apiKeys.changes,
    metrics,
    keyRecheckMs: Math.max(config.apiKeyCacheSeconds * 1000, FOLLOWER_LIMITS.minKeyRecheckMs),
    log: app.log,
  });
  state.onStopAccepting(() => followers.close());
  deliverWebhooks(app, config, database, metrics, state, {
    onAdvance: (listener) => petEvents.feed.onAdvance(listener),
    ...followers.forWebhooks(),
  });
  await app.register(eventController, { prefix: SURFACE_PATHS.rest, petEvents: eventService, guard: requests.operationHook, followers });
  // Outside the pet operations' guard: no key; its address pays.
  await app.register(credentialsController, { prefix: SURFACE_PATHS.rest, apiKeys, chargeAddress: requests.addressHook });
  // The administration API (docs/admin.md): the same guard, each operation its `…:admin` scope; never granted by CORS.
  const audit = new AuditTrail(database, app.log);
  const adminGuard = auditedGuard(requests.operationHook, audit);
  await app.register(auditEventController, { prefix: SURFACE_PATHS.admin, audit, guard: adminGuard });
  await app.register(apiKeyController, { prefix: SURFACE_PATHS.admin, keys: new ApiKeyAdministration(apiKeys, audit), guard: adminGuard });
  const deliveries = new WebhookDeliveryService(database, audit);
  await app.register(webhookDeliveryController, { prefix: SURFACE_PATHS.admin, deliveries, guard: adminGuard });
  purgeWebhookAttempts(app, new WebhookAttemptRepository(database));
  const webhookEndpoints = new WebhookEndpointService(database, config.webhooks, audit);
  await app.register(webhookEndpointController, { prefix: SURFACE_PATHS.admin, webhookEndpoints, guard: adminGuard });
  await app.register(graphqlPlugin, {
    petService,
    guard: requests,
    production: config.nodeEnv === 'production',
    traced,
    // On the embedded database the server holds the file, so the apikey CLI cannot open it.
    keyCommand: keepsDevApiKey(config) ? `cat ${DEV_API_KEY_PATH}` : 'npm run apikey -- create <name>',
    trustedDocuments,
    subscriptions: {
      events: eventService,
      guard,
      followers,
      metrics,
      clientAddressOf: clientAddressOf(config.trustProxy),
      onStopAccepting: (close) => state.onStopAccepting(close),
    },
  });
  await serveOpenapi(app);
  // Outside the guard: no key, no rate limit.
  await app.register(healthRoutes, { database, state, redisHealth });
  await app.register(landingPageRoutes);
  await app.ready();
  return app;
}
