import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { SpanKind, trace } from '@opentelemetry/api';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { type ExecutionArgs, GraphQLError, type GraphQLSchema, Kind, OperationTypeNode, type ValidationRule, getOperationAST, specifiedRules } from 'graphql';
import { type Context, type SubscribePayload, handleProtocols, makeServer } from 'graphql-ws';
import { WebSocketServer } from 'ws';
import type { PetEventService } from '../events/pet-event.service';
import { AppError, toAppError } from '../errors/error-catalogue';
import type { FeedFollowers, FeedStream } from '../following/feed-followers';
import type { Guard, GuardState } from '../guard/guard';
import { rateLimitUnits } from '../guard/rate-limiter';
import { refuseUpgrade, routeUpgrades } from '../http/upgrade.router';
import { subscriptionSpanContext } from '../observability/event-delivery.tracer';
import type { Metrics } from '../observability/metrics.registry';
import { checkDocument } from './document-check';
import type { SubscriptionContext } from './graphql-context';
import { createGraphqlErrorFormatter, thrownGraphqlError } from './graphql-error.formatter';
import { SocketTransport, connectionLifecycle } from './subscription.lifecycle';
import { SUBSCRIPTION_CLOSE } from './subscription-close.codes';
import { SUBSCRIPTION_LIMITS } from '../limits';
import { type SocketExtra, openSubscriptionSocket } from './subscription.transport';
import { SURFACE_PATHS } from '../surface-paths';
import { type TrustedDocuments, resolveTrustedDocument } from './trusted-documents';

/** What the WebSocket endpoint needs (docs/subscriptions.md). */
export interface SubscriptionServerOptions {
  schema: GraphQLSchema;
  /** The change feed's operations the subscriptions call (their SubscriptionContext). */
  events: PetEventService;
  /** The HTTP requests' guard: the same key checks and rate limit. */
  guard: Guard;
  /** Every stream of the feed: each admitted connection is one (its key's budget, validity, pace, end). */
  followers: FeedFollowers;
  metrics: Metrics;
  /** TRUST_PROXY applied. */
  clientAddressOf: (request: IncomingMessage) => string;
  /** Where the WebSockets' close is registered, run as the listener stops accepting (ServiceState.onStopAccepting). */
  onStopAccepting: (close: () => Promise<void>) => void;
  /** The HTTP operations' rules beyond graphql-js's own (GraphQL Armor). */
  validationRules: readonly ValidationRule[];
  /** The documents a publishable key may run (docs/api-keys.md "Trusted documents"). */
  trustedDocuments: TrustedDocuments;
  log: FastifyBaseLogger;
}

type WsContext = Context<Record<string, unknown> | undefined, SocketExtra>;

/** The WebSocket versions ws speaks. */
const WEBSOCKET_VERSIONS = ['13', '8'];

/** The answer to an upgrade ws found invalid: 405 for another method, else 400 (RFC 6455 §4.4). */
function handshakeRefusal(error: Error, request: IncomingMessage): AppError {
  if (request.method !== 'GET') return new AppError('METHOD_NOT_ALLOWED', 'A WebSocket upgrade must be a GET request.', { Allow: 'GET' });
  const version = String(Number(request.headers['sec-websocket-version']));
  return new AppError(
    'BAD_REQUEST',
    `Invalid WebSocket handshake: ${error.message}.`,
    WEBSOCKET_VERSIONS.includes(version) ? {} : { 'Sec-WebSocket-Version': WEBSOCKET_VERSIONS.join(', ') },
  );
}

/** `message` as a WebSocket close reason: at most 123 bytes (RFC 6455 §5.5), cut at a character. */
function closeReason(message: string): string {
  let reason = message;
  while (Buffer.byteLength(reason) > 123) reason = reason.slice(0, -1);
  return reason;
}

/** The `Authorization` entry of a `connection_init` payload, its name in any case. */
function authorizationOf(params: Record<string, unknown> | undefined): unknown {
  const name = Object.keys(params ?? {}).find((key) => key.toLowerCase() === 'authorization');
  return name === undefined ? undefined : params![name];
}

/**
 * graphql-ws's JSON reviver: a `subscribe` that names a trusted document by id only (`documentId` or
 * `extensions.persistedQuery`) gets `query: ""`, which graphql-ws requires before any hook runs; onSubscribe then
 * resolves the id. Only the message itself (key "") is looked at.
 */
export function reviveTrustedDocumentIds(key: string, value: unknown): unknown {
  if (key !== '' || typeof value !== 'object' || value === null) return value;
  const message = value as { type?: unknown; payload?: Record<string, unknown> | null };
  const payload = message.payload;
  if (message.type !== 'subscribe' || typeof payload !== 'object' || payload === null || 'query' in payload) return value;
  if (!('documentId' in payload) && !('extensions' in payload)) return value;
  return { ...message, payload: { ...payload, query: '' } };
}

/**
 * GraphQL subscriptions over WebSocket on `/graphql`, graphql-ws over ws (docs/subscriptions.md):
 * close codes and limits there. Lifecycle: subscription.lifecycle.ts; keep-alive: subscription.transport.ts.
 */
export function serveSubscriptions(app: FastifyInstance, options: SubscriptionServerOptions): void {
  const { schema, guard, metrics, log } = options;
  const rules = [...specifiedRules, ...options.validationRules];
  const formatError = createGraphqlErrorFormatter((error) => log.error({ err: error }, 'unexpected GraphQL subscription error'));
  const wss = new WebSocketServer({ noServer: true, maxPayload: SUBSCRIPTION_LIMITS.maxMessageBytes, handleProtocols });
  const connections = connectionLifecycle(options);
  /** Each upgrade's transport, and its stream when the upgrade carried its key and was admitted then. */
  const upgraded = new WeakMap<IncomingMessage, { transport: SocketTransport; stream?: FeedStream }>();
  /**
   * A client that can send headers (a server; browsers cannot) may put its key in the upgrade's `Authorization`: it is
   * admitted there, and refused as an HTTP request is (401, 403, 429 in the Error shape) before any WebSocket is made.
   */
  /** The one admission of a WebSocket, at its upgrade or its connection_init: the guard, then a place among the feed's streams. */
  const admit = async (request: IncomingMessage, authorization: unknown, transport: SocketTransport): Promise<FeedStream> => {
    const state: GuardState = {};
    const address = options.clientAddressOf(request);
    await guard.admit({ address, authorization, origin: request.headers.origin, units: SUBSCRIPTION_LIMITS.connectionCost }, state);
    return options.followers.admit(state, transport);
  };
  const admitUpgrade = async (request: IncomingMessage, socket: Duplex) => {
    const transport = new SocketTransport(socket);
    upgraded.set(request, { transport });
    if (request.headers.authorization === undefined) return;
    const stream = await admit(request, request.headers.authorization, transport);
    socket.once('close', () => stream.release());
    upgraded.set(request, { transport, stream });
  };
  const upgrades = routeUpgrades(app, {
    path: SURFACE_PATHS.graphql,
    service: 'GraphQL subscriptions',
    clientAddressOf: options.clientAddressOf,
    maxPendingPerAddress: SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress,
    pendingMs: SUBSCRIPTION_LIMITS.connectionInitWaitMs,
    closeHandshakeMs: SUBSCRIPTION_LIMITS.closeHandshakeMs,
    admit: admitUpgrade,
    onStopAccepting: options.onStopAccepting,
    accept: (request, socket, head) => wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request)),
    close: () => connections.close(wss),
  });
  // In the Error shape instead of ws's text/html.
  wss.on('wsClientError', (error: Error, socket: Duplex, request: IncomingMessage) =>
    refuseUpgrade(request, socket, handshakeRefusal(error, request), SUBSCRIPTION_LIMITS.closeHandshakeMs),
  );
  wss.on('connection', (socket, request: IncomingMessage) => {
    // Every upgrade is admitted (admitUpgrade) before ws makes its socket.
    upgraded.get(request)!.transport.bind(socket);
    connections.opened(socket);
    openSubscriptionSocket(server, socket, request, log, () => connections.of(socket)?.pace);
  });

  const onConnect = async ({ extra: { socket, request }, connectionParams }: WsContext): Promise<boolean> => {
    // Refused by closing the socket (graphql-ws's own 4403 then changes nothing).
    const refuse = (close: { code: number; reason: string }) => (socket.close(close.code, close.reason), false);
    try {
      const { transport, stream: admitted } = upgraded.get(request)!;
      const authorization = authorizationOf(connectionParams);
      if (admitted) {
        // Admitted at the upgrade: connection_init may repeat the key, not name another.
        if (authorization !== undefined && authorization !== request.headers.authorization) return refuse(SUBSCRIPTION_CLOSE.forbidden);
        connections.hold(socket, admitted);
      } else {
        connections.hold(socket, await admit(request, authorization, transport));
      }
      // Before the ack: from now on the key's limits hold it, not its address's pending count.
      upgrades.authenticated(request);
      return true;
    } catch (error) {
      const { appError, unexpected } = toAppError(error);
      if (unexpected) log.error({ err: error }, 'unexpected error authenticating a WebSocket');
      if (appError.code === 'UNAUTHENTICATED') return refuse(SUBSCRIPTION_CLOSE.forbidden);
      if (appError.code === 'FORBIDDEN') return refuse(SUBSCRIPTION_CLOSE.originRefused);
      // The reason is the refusal's message ("Too many open streams…", "Rate limit reached…"), cut to a close frame's 123 bytes.
      if (appError.code === 'TOO_MANY_REQUESTS') return refuse({ code: SUBSCRIPTION_CLOSE.tooManyConnections.code, reason: closeReason(appError.message) });
      return refuse(SUBSCRIPTION_CLOSE.unavailable);
    }
  };

  const tracer = trace.getTracer('pet-store-gateway');
  // A SERVER span per `subscribe` (a no-op with tracing off): its key checks and charge are its children, its events link to it.
  const onSubscribe = (ctx: WsContext, id: string, payload: SubscribePayload): Promise<ExecutionArgs | readonly GraphQLError[]> =>
    tracer.startActiveSpan('subscription', { kind: SpanKind.SERVER, attributes: { 'graphql.operation.type': 'subscription' } }, async (span) => {
      try {
        const subscribed = await subscribe(ctx, id, payload);
        if (!Array.isArray(subscribed)) {
          const { document, operationName } = subscribed as ExecutionArgs;
          const name = getOperationAST(document, operationName)?.name?.value;
          if (name) span.updateName(`subscription ${name}`).setAttribute('graphql.operation.name', name);
        }
        return subscribed;
      } finally {
        span.end();
      }
    });

  const subscribe = async (ctx: WsContext, _id: string, payload: SubscribePayload): Promise<ExecutionArgs | readonly GraphQLError[]> => {
    const stream = connections.of(ctx.extra.socket);
    if (!stream) return [thrownGraphqlError('UNAUTHENTICATED', 'The connection is not authenticated.')];
    const only = {
      operation: OperationTypeNode.SUBSCRIPTION,
      message: `Only subscriptions are served over WebSocket: send queries and mutations to POST ${SURFACE_PATHS.graphql}.`,
    };
    // The rule of HTTP requests (trusted-documents.hook.ts), by the same function.
    const trusted = resolveTrustedDocument(payload, stream.state.credential!.kind, options.trustedDocuments);
    if (trusted.action === 'refuse') return [thrownGraphqlError(trusted.code)];
    const request = trusted.action === 'substitute' ? { ...payload, query: trusted.query } : payload;
    const checked = checkDocument(schema, rules, request, log.child({ surface: 'websocket', apiKeyId: stream.apiKeyId }), only);
    if ('refusals' in checked) return checked.refusals.map(({ code, message }) => thrownGraphqlError(code, message));
    // graphql-ws lists this subscription among the connection's before running this hook.
    if (Object.keys(ctx.subscriptions).length > SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection) {
      const most = SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection;
      return [thrownGraphqlError('TOO_MANY_REQUESTS', `Too many subscriptions on this connection: at most ${most} at once; complete one first.`)];
    }
    try {
      stream.authorize(checked.scopes);
      await guard.spend(stream.state, rateLimitUnits(checked.price.calls));
    } catch (error) {
      const { appError, unexpected } = toAppError(error);
      if (unexpected) log.error({ err: error }, 'unexpected error authorizing or charging a subscription');
      return [thrownGraphqlError(appError)];
    }
    const { document, operationName } = checked;
    const field = getOperationAST(document, operationName)?.selectionSet.selections[0];
    const delivery = { name: field?.kind === Kind.FIELD ? field.name.value : 'unknown', span: subscriptionSpanContext() };
    // The feed through the connection's stream: its key's validity, pace and metrics hold for every event.
    const events: SubscriptionContext['events'] = {
      streamStart: (input) => options.events.streamStart(input),
      follow: (start) => stream.follow(start, delivery),
    };
    const contextValue: SubscriptionContext = { caller: { apiKeyId: stream.apiKeyId }, events };
    return { schema, document, operationName, variableValues: payload.variables ?? {}, contextValue };
  };

  const server = makeServer<Record<string, unknown> | undefined, SocketExtra>({
    schema,
    jsonMessageReviver: reviveTrustedDocumentIds,
    connectionInitWaitTimeout: SUBSCRIPTION_LIMITS.connectionInitWaitMs,
    onConnect,
    onSubscribe,
    onOperation: (ctx, id, _payload, _args, result) => {
      if (Symbol.asyncIterator in Object(result)) connections.started(ctx.extra.socket, id);
    },
    onComplete: (ctx, id) => connections.ended(ctx.extra.socket, id),
    onNext: (_ctx, _id, _payload, args, result) => {
      const field = getOperationAST(args.document, args.operationName)?.selectionSet.selections[0];
      // A result without data is the refusal of a `subscribe` (petEvents' bad `after`), not an event.
      if (result.data !== undefined) metrics.countDeliveredEvent(field?.kind === Kind.FIELD ? field.name.value : 'unknown');
      if (!result.errors) return;
      return { ...result, errors: result.errors.map((error) => formatError(error.toJSON(), error)) };
    },
    onError: (_ctx, _id, _payload, errors) => errors.map((error) => formatError(error.toJSON(), error)),
  });
}
