import { type IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import {
  type DocumentNode,
  type ExecutionArgs,
  GraphQLError,
  type GraphQLSchema,
  Kind,
  OperationTypeNode,
  type ValidationRule,
  getOperationAST,
  getVariableValues,
  parse,
  specifiedRules,
  validate,
} from 'graphql';
import { type Context, type SubscribePayload, handleProtocols, makeServer } from 'graphql-ws';
import { type WebSocket, WebSocketServer } from 'ws';
import type { ApiKeyService } from '../auth/api-key.service';
import { bearerTokenOf } from '../auth/auth.hook';
import { AppError, toAppError } from '../errors/error-catalogue';
import { writeRawHttpError } from '../errors/raw-http-error';
import { type RateLimitedClient, rateLimitUnits } from '../http/rate-limit';
import { onStopAccepting } from '../http/graceful-shutdown';
import type { Metrics } from '../observability/metrics.registry';
import { logQueryLimitRefusal, priceOf } from './cost-limit.plugin';
import { createGraphqlErrorFormatter, thrownGraphqlError } from './graphql-error.formatter';
import { PARSE_OPTIONS, type QueryLimitError, priceRefusal, unpriceableRefusal } from './query-limits';
import { SUBSCRIPTION_CLOSE } from './subscription-close.codes';
import { type SocketExtra, openSubscriptionSocket } from './subscription.transport';
import { SUBSCRIPTION_LIMITS } from '../limits';

/** What the WebSocket endpoint needs (docs/subscriptions.md). */
export interface SubscriptionServerOptions {
  /** The executable schema, with its Subscription type (schema.ts). */
  schema: GraphQLSchema;
  /** The same key checks and cache as the HTTP guard. */
  apiKeys: ApiKeyService;
  /** Charges rate-limit units to a key (or an address), as http/rate-limit.ts `spendFor`. */
  spendFor: (client: RateLimitedClient, units: number) => Promise<void>;
  /** Where sockets, subscriptions and delivered events are counted. */
  metrics: Metrics;
  /** The client's address of an upgrade request (TRUST_PROXY applied), for the per-address rate limit. */
  clientAddressOf: (request: IncomingMessage) => string;
  /** How often (ms) each open connection's key is checked again: API_KEY_CACHE_SECONDS. */
  keyRecheckMs: number;
  /** The document rules of HTTP operations beyond graphql-js's own (GraphQL Armor: depth, aliases, directives). */
  validationRules: readonly ValidationRule[];
  log: FastifyBaseLogger;
}

/** An authenticated connection. */
interface Connection {
  apiKeyId: number;
  ip: string;
}

/** A connection's graphql-ws context. */
type WsContext = Context<Record<string, unknown> | undefined, SocketExtra>;

/**
 * Answers an upgrade request that gets no WebSocket with the spec's Error body and the error's
 * headers, and closes the connection: at once when the peer closes its side, else after
 * {@link SUBSCRIPTION_LIMITS}.closeHandshakeMs, so a refused peer holds nothing.
 */
function refuseUpgrade(request: IncomingMessage, socket: Duplex, error: AppError): void {
  const cut = setTimeout(() => socket.destroy(), SUBSCRIPTION_LIMITS.closeHandshakeMs);
  cut.unref();
  socket.once('close', () => clearTimeout(cut));
  socket.on('error', () => socket.destroy());
  socket.once('end', () => socket.destroy());
  writeRawHttpError(socket, error, request.method === 'HEAD');
}

/** The WebSocket versions ws speaks: 13 (RFC 6455) and 8 (its last draft). */
const WEBSOCKET_VERSIONS = ['13', '8'];

/**
 * The answer to an upgrade to `/graphql` that ws found invalid (its `wsClientError`): 405 with
 * `Allow: GET` for another method; else 400 with ws's reason, plus `Sec-WebSocket-Version` when
 * the version is one ws does not speak (RFC 6455 §4.4, whose example answers 400).
 *
 * @param error - ws's error; its message names the bad header ("Missing or invalid Sec-WebSocket-Key header").
 * @param request - the upgrade request.
 */
function handshakeRefusal(error: Error, request: IncomingMessage): AppError {
  if (request.method !== 'GET') return new AppError('METHOD_NOT_ALLOWED', 'A WebSocket upgrade must be a GET request.', { Allow: 'GET' });
  const version = String(Number(request.headers['sec-websocket-version']));
  return new AppError(
    'BAD_REQUEST',
    `Invalid WebSocket handshake: ${error.message}.`,
    WEBSOCKET_VERSIONS.includes(version) ? {} : { 'Sec-WebSocket-Version': WEBSOCKET_VERSIONS.join(', ') },
  );
}

/** The `Authorization` entry of a `connection_init` payload, its name in any case. */
function authorizationOf(params: Record<string, unknown> | undefined): unknown {
  const name = Object.keys(params ?? {}).find((key) => key.toLowerCase() === 'authorization');
  return name === undefined ? undefined : params![name];
}

/**
 * GraphQL subscriptions over WebSocket on `/graphql`, the port and path of HTTP GraphQL
 * (docs/subscriptions.md): the `graphql-transport-ws` protocol (graphql-ws over ws, in
 * `noServer` mode on Fastify's HTTP server's `upgrade` event; an upgrade to any other path is
 * answered 404, and 503 once shutting down). Every refused upgrade is answered in the Error shape.
 * - An invalid handshake is 400 (405 with `Allow: GET` for another method than GET). Past
 *   {@link SUBSCRIPTION_LIMITS}.maxPendingConnectionsPerAddress upgraded sockets of one address
 *   (TRUST_PROXY applied) that are not authenticated yet, the next upgrade is 429 with
 *   `Retry-After`, before ws makes a socket.
 * - `connection_init` must carry `{"Authorization": "Bearer <key>"}` (the name in any case),
 *   checked by the HTTP guard's ApiKeyService and cache; else the socket is closed with 4403.
 *   An attempt without a key this process knows costs its address (TRUST_PROXY applied) one
 *   request, before any lookup, as on HTTP; then each connection costs its key
 *   {@link SUBSCRIPTION_LIMITS}.connectionCost. Past the
 *   rate limit, or past {@link SUBSCRIPTION_LIMITS}.maxConnectionsPerKey open connections of
 *   one key on this instance, the socket is closed with 4429; when the database or the rate
 *   limit's store cannot answer, with 1013.
 * - Every `keyRecheckMs` the keys of the open connections are looked up again (one query), and
 *   the sockets of revoked keys are closed with 4403.
 * - `subscribe` documents are parsed with the HTTP token limit, validated with graphql-js's
 *   rules plus the HTTP ones (depth, aliases, directives), priced like HTTP operations
 *   (cost-limit.plugin.ts) and must be subscriptions (queries and mutations go over HTTP); a
 *   refusal by one of these limits names it and its maximum, as on HTTP, and is logged at info. Each
 *   costs its key `rateLimitUnits` of its calls (its one root field: 1); past the rate limit, or past
 *   {@link SUBSCRIPTION_LIMITS}.maxSubscriptionsPerConnection at once, it is refused with an
 *   `error` message whose `extensions.code` is TOO_MANY_REQUESTS. Every error carries a
 *   catalogue code, never a stack trace.
 * - Sockets are pinged every {@link SUBSCRIPTION_LIMITS}.keepAliveMs and dropped when the pong
 *   echoing the ping has not come by the next ping; a socket with more than
 *   {@link SUBSCRIPTION_LIMITS}.maxBufferedBytes waiting for its peer is closed with 1008
 *   (subscription.transport.ts); at shutdown they are closed with 1001 (see graceful-shutdown.ts).
 *
 * @param app - the Fastify app, whose HTTP server's upgrades this takes.
 * @param options - see {@link SubscriptionServerOptions}.
 */
export function serveSubscriptions(app: FastifyInstance, options: SubscriptionServerOptions): void {
  const { schema, apiKeys, spendFor, metrics, log } = options;
  const rules = [...specifiedRules, ...options.validationRules];
  const formatError = createGraphqlErrorFormatter((error) => log.error({ err: error }, 'unexpected GraphQL subscription error'));
  const wss = new WebSocketServer({ noServer: true, maxPayload: SUBSCRIPTION_LIMITS.maxMessageBytes, handleProtocols });
  const connections = new Map<WebSocket, Connection>();
  const perKey = new Map<number, number>();
  /** The subscriptions of each socket that are running (their graphql-ws ids), for the gauge. */
  const running = new WeakMap<WebSocket, Set<string>>();
  let accepting = true;

  const release = (socket: WebSocket) => {
    const connection = connections.get(socket);
    if (!connection) return;
    connections.delete(socket);
    const left = (perKey.get(connection.apiKeyId) ?? 1) - 1;
    if (left > 0) perKey.set(connection.apiKeyId, left);
    else perKey.delete(connection.apiKeyId);
  };

  /** Upgraded sockets of each client address that are not authenticated yet, and how each gives its place back. */
  const pendingPerAddress = new Map<string, number>();
  const releasePending = new WeakMap<IncomingMessage, () => void>();
  /** Counts `request`'s socket as pending for `ip` until it authenticates or closes. */
  const holdPending = (request: IncomingMessage, socket: Duplex, ip: string) => {
    pendingPerAddress.set(ip, (pendingPerAddress.get(ip) ?? 0) + 1);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      const left = (pendingPerAddress.get(ip) ?? 1) - 1;
      if (left > 0) pendingPerAddress.set(ip, left);
      else pendingPerAddress.delete(ip);
    };
    releasePending.set(request, release);
    socket.once('close', release);
  };

  /** Every socket handed over by an upgrade: Node's HTTP server no longer tracks them, shutdown must. */
  const upgraded = new Set<Duplex>();
  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    const path = (request.url ?? '').split('?')[0];
    const ip = options.clientAddressOf(request);
    if (request.headers.upgrade?.toLowerCase() !== 'websocket') {
      // Another protocol (curl's `Upgrade: h2c`): with this listener, Node no longer serves such a
      // request as plain HTTP/1.1 by itself, so the app answers it here, on its socket, as before.
      const response = new ServerResponse(request);
      response.shouldKeepAlive = false;
      response.assignSocket(socket as Socket);
      // Node's server closes the sockets of its own responses; this one is ours to close.
      response.once('finish', () => socket.end());
      socket.once('end', () => socket.destroy());
      app.routing(request, response);
    } else if (path !== '/graphql') {
      refuseUpgrade(request, socket, new AppError('NOT_FOUND', `No WebSocket at ${path}: GraphQL subscriptions are at /graphql.`));
    } else if (!accepting) {
      refuseUpgrade(request, socket, new AppError('SERVICE_UNAVAILABLE', 'Shutting down.'));
    } else if ((pendingPerAddress.get(ip) ?? 0) >= SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress) {
      // Before ws makes anything: a refused upgrade costs only this answer.
      const message =
        `Too many WebSockets from this address awaiting connection_init: at most ` +
        `${SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress}; send connection_init on those first.`;
      refuseUpgrade(request, socket, new AppError('TOO_MANY_REQUESTS', message, { 'Retry-After': String(SUBSCRIPTION_LIMITS.connectionInitWaitMs / 1000) }));
    } else {
      holdPending(request, socket, ip);
      wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
    }
  });
  // An invalid handshake (method, key, version): answered in the Error shape instead of ws's text/html.
  wss.on('wsClientError', (error: Error, socket: Duplex, request: IncomingMessage) => refuseUpgrade(request, socket, handshakeRefusal(error, request)));
  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    metrics.countOpenSocket(1);
    const openedAt = performance.now();
    socket.once('close', (code: number) => {
      metrics.countOpenSocket(-1);
      // One log line per WebSocket, as per HTTP request (docs/operations.md "Logs").
      const durationMs = Math.round((performance.now() - openedAt) * 1000) / 1000;
      log.info(
        { route: '/graphql', surface: 'websocket', apiKeyId: connections.get(socket)?.apiKeyId ?? null, closeCode: code, durationMs },
        'websocket closed',
      );
      release(socket);
    });
    openSubscriptionSocket(server, socket, request, log);
  });

  /** Closes `socket` with `close` and refuses the connection (graphql-ws's own 4403 then changes nothing). */
  const refuse = (socket: WebSocket, close: { code: number; reason: string }) => {
    socket.close(close.code, close.reason);
    return false;
  };

  const onConnect = async (ctx: WsContext): Promise<boolean> => {
    const { socket, request } = ctx.extra;
    const ip = options.clientAddressOf(request);
    const key = bearerTokenOf(authorizationOf(ctx.connectionParams));
    const recognised = key === undefined ? undefined : apiKeys.recognise(key);
    let reserved: number | undefined;
    try {
      // Without a key this process trusts, the address pays for the attempt (and the lookup), as on HTTP (docs/security.md "Limits").
      if (recognised?.state !== 'trusted' && recognised?.state !== 'known') await spendFor({ ip }, 1);
      if (key === undefined || recognised === undefined || recognised.state === 'malformed' || recognised.state === 'refused') {
        return refuse(socket, SUBSCRIPTION_CLOSE.forbidden);
      }
      const apiKey = recognised.state === 'trusted' ? recognised.apiKey : await apiKeys.findActive(key);
      if (!apiKey) return refuse(socket, SUBSCRIPTION_CLOSE.forbidden);
      const open = perKey.get(apiKey.id) ?? 0;
      if (open >= SUBSCRIPTION_LIMITS.maxConnectionsPerKey) return refuse(socket, SUBSCRIPTION_CLOSE.tooManyConnections);
      perKey.set(apiKey.id, open + 1);
      reserved = apiKey.id;
      connections.set(socket, { apiKeyId: apiKey.id, ip });
      await spendFor({ apiKeyId: apiKey.id, ip }, SUBSCRIPTION_LIMITS.connectionCost);
      // Closed while it was being checked: nothing to keep.
      if (socket.readyState !== socket.OPEN) release(socket);
      // Authenticated: the key's limits hold it from now on, not its address's pending count (before the ack is sent).
      releasePending.get(request)?.();
      return true;
    } catch (error) {
      if (reserved !== undefined) release(socket);
      const { appError, unexpected } = toAppError(error);
      if (unexpected) log.error({ err: error }, 'unexpected error authenticating a WebSocket');
      if (appError.code === 'TOO_MANY_REQUESTS') return refuse(socket, { code: SUBSCRIPTION_CLOSE.tooManyConnections.code, reason: appError.message });
      return refuse(socket, SUBSCRIPTION_CLOSE.unavailable);
    }
  };

  const onSubscribe = async (ctx: WsContext, _id: string, payload: SubscribePayload): Promise<ExecutionArgs | readonly GraphQLError[]> => {
    const connection = connections.get(ctx.extra.socket);
    if (!connection) return [thrownGraphqlError('UNAUTHENTICATED', 'The connection is not authenticated.')];
    const logRefusal = (errors: readonly Error[], cost?: number) =>
      logQueryLimitRefusal(log.child({ surface: 'websocket', apiKeyId: connection.apiKeyId }), errors, cost);
    let document: DocumentNode;
    try {
      document = parse(payload.query, PARSE_OPTIONS);
    } catch (error) {
      logRefusal([error as Error]);
      return [thrownGraphqlError('GRAPHQL_PARSE_FAILED', (error as Error).message)];
    }
    const invalid = validate(schema, document, rules);
    if (invalid.length > 0) {
      logRefusal(invalid);
      return invalid.map((error) => thrownGraphqlError('GRAPHQL_VALIDATION_FAILED', error.message));
    }
    const operationName = payload.operationName ?? undefined;
    const operation = getOperationAST(document, operationName);
    if (!operation) return [thrownGraphqlError('OPERATION_RESOLUTION_FAILURE', 'The operation to run could not be determined.')];
    if (operation.operation !== OperationTypeNode.SUBSCRIPTION) {
      return [thrownGraphqlError('GRAPHQL_VALIDATION_FAILED', 'Only subscriptions are served over WebSocket: send queries and mutations to POST /graphql.')];
    }
    const variables = payload.variables ?? {};
    const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
    if (coerced.errors) return coerced.errors.map((error) => thrownGraphqlError('BAD_USER_INPUT', error.message));
    const price = priceOf(schema, document, operation, operationName, variables);
    const refuse = (refusal: QueryLimitError, cost?: number) => {
      logRefusal([refusal], cost);
      return [thrownGraphqlError(refusal)];
    };
    if ('unpriceable' in price) return refuse(unpriceableRefusal());
    const refusal = priceRefusal(price);
    if (refusal) return refuse(refusal, price.cost);
    // graphql-ws lists this subscription among the connection's before running this hook.
    if (Object.keys(ctx.subscriptions).length > SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection) {
      return [
        thrownGraphqlError(
          'TOO_MANY_REQUESTS',
          `Too many subscriptions on this connection: at most ${SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection} at once; complete one first.`,
        ),
      ];
    }
    try {
      await spendFor(connection, rateLimitUnits(price.calls));
    } catch (error) {
      const { appError, unexpected } = toAppError(error);
      if (unexpected) log.error({ err: error }, 'unexpected error charging a subscription');
      // Code and message only, like every WebSocket `error`: no retryAfterSeconds from the HTTP answer's Retry-After.
      return [thrownGraphqlError(appError.code, appError.message)];
    }
    // What runs holds no source text and no tokens (comments included, which the token limit does not
    // count): a running subscription keeps only its AST, however large the message was.
    const compact = parse(payload.query, { ...PARSE_OPTIONS, noLocation: true });
    return { schema, document: compact, operationName, variableValues: variables, contextValue: { caller: { apiKeyId: connection.apiKeyId } } };
  };

  const server = makeServer<Record<string, unknown> | undefined, SocketExtra>({
    schema,
    connectionInitWaitTimeout: SUBSCRIPTION_LIMITS.connectionInitWaitMs,
    onConnect,
    onSubscribe,
    onOperation: (ctx, id, _payload, _args, result) => {
      if (!(Symbol.asyncIterator in Object(result))) return;
      const ids = running.get(ctx.extra.socket) ?? new Set<string>();
      running.set(ctx.extra.socket, ids.add(id));
      metrics.countActiveSubscription(1);
    },
    onComplete: (ctx, id) => {
      if (running.get(ctx.extra.socket)?.delete(id)) metrics.countActiveSubscription(-1);
    },
    onNext: (_ctx, _id, _payload, args, result) => {
      const field = getOperationAST(args.document, args.operationName)?.selectionSet.selections[0];
      metrics.countDeliveredEvent(field?.kind === Kind.FIELD ? field.name.value : 'unknown');
      if (!result.errors) return;
      return { ...result, errors: result.errors.map((error) => formatError(error.toJSON(), error)) };
    },
    onError: (_ctx, _id, _payload, errors) => errors.map((error) => formatError(error.toJSON(), error)),
  });

  // Keys revoked elsewhere (the CLI, another instance) close their sockets within the cache period.
  const recheck = setInterval(() => {
    const ids = new Set([...connections.values()].map((connection) => connection.apiKeyId));
    if (ids.size === 0) return;
    apiKeys.activeIds(ids).then(
      (active) => {
        for (const [socket, connection] of connections) {
          if (!active.has(connection.apiKeyId)) socket.close(SUBSCRIPTION_CLOSE.revoked.code, SUBSCRIPTION_CLOSE.revoked.reason);
        }
      },
      (error: unknown) => log.warn({ err: error }, 'cannot re-check the API keys of open WebSockets now'),
    );
  }, options.keyRecheckMs);
  recheck.unref();

  let closing: Promise<void> | undefined;
  onStopAccepting(app, () => {
    closing ??= (async () => {
      accepting = false;
      clearInterval(recheck);
      // Peers that do not answer the close in time are cut, so that the server can close.
      const cut = setTimeout(() => {
        for (const socket of wss.clients) socket.terminate();
      }, SUBSCRIPTION_LIMITS.closeHandshakeMs);
      try {
        for (const socket of wss.clients) socket.close(SUBSCRIPTION_CLOSE.goingAway.code, SUBSCRIPTION_CLOSE.goingAway.reason);
        // Resolves once every socket has closed (ws's `close` waits for its clients).
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      } finally {
        clearTimeout(cut);
      }
      // Anything else still open on an upgraded socket (a refused upgrade whose peer keeps it half open).
      for (const socket of upgraded) socket.destroy();
    })();
    return closing;
  });
}
