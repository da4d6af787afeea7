import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Database } from '../database/database';

/** What the metrics know of one served request. */
export interface RequestLabels {
  surface: 'rest' | 'graphql' | 'other';
  /** The route template as Fastify matched it (`/v1/pets/:petId`, `/graphql`); absent when no route matched. */
  route?: string;
  /** GraphQL: the operation type and root fields (`query pets`), a set bounded by the schema; absent elsewhere. */
  graphqlOperation?: string;
  method: string;
  status: number;
}

/**
 * The buckets OpenTelemetry's HTTP semantic conventions advise for `http.server.request.duration`, in seconds
 * (https://opentelemetry.io/docs/specs/semconv/http/http-metrics/#metric-httpserverrequestduration).
 */
export const HTTP_SERVER_DURATION_BUCKETS = Object.freeze([0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]);

/** The methods the semantic conventions name; any other is reported as `_OTHER`, so a client cannot grow the series. */
const KNOWN_METHODS: ReadonlySet<string> = new Set(['CONNECT', 'DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'TRACE']);

/** The `version` of the project's package.json, found from here whether this runs from src/ or from dist/. */
function packageVersion(): string {
  let root = __dirname;
  while (!existsSync(path.join(root, 'package.json')) && path.dirname(root) !== root) root = path.dirname(root);
  try {
    const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version?: unknown };
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** One instance's change feed (docs/events.md), as the metrics report it. */
export interface FeedState {
  /** The last position read and handed to followers. */
  position: number;
  followers: number;
  /** Holds the sequencer lease. */
  leading: boolean;
  /** Pets stamped by this instance since it started. */
  stamped: number;
}

/** How a follower of the change feed receives it (the `transport` label): an SSE stream, a WebSocket, a webhook endpoint. */
export type FeedTransport = 'sse' | 'websocket' | 'webhook';

/** The service's Prometheus metrics (docs/operations.md "Metrics"), in a registry of their own. */
export interface Metrics {
  registry: Registry;
  observeRequest: (labels: RequestLabels, seconds: number) => void;
  countDeprecatedCall: (operation: string, apiKeyId: number) => void;
  /** Reports the nodes of `database`: their state, and their connection pools (MySQL only). */
  watchDatabase: (database: Database) => void;
  /** Reports this instance's view of the change feed and whether it sequences (docs/events.md), read at each scrape. */
  watchFeed: (state: () => FeedState) => void;
  countOpenSocket: (delta: 1 | -1) => void;
  /** A stream following the change feed opened (1) or closed (-1): an SSE response, a WebSocket connection, an endpoint a webhook dispatcher delivers to. */
  countFeedStream: (transport: FeedTransport, delta: 1 | -1) => void;
  /** One event of the change feed handed to one stream. */
  countFeedDelivery: (transport: FeedTransport) => void;
  countActiveSubscription: (delta: 1 | -1) => void;
  /** `subscription` is the root field, e.g. `petCreated`. */
  countDeliveredEvent: (subscription: string) => void;
  /** Reports whether Redis (`REDIS_URL`) answers, as the Redis health monitor judges it, read at each scrape. */
  watchRedis: (up: () => boolean) => void;
}

/** Creates the metrics in a fresh registry, so several apps can run in one process. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: 'petstore_http_request_duration_seconds',
    help: 'Deprecated: use http_server_request_duration_seconds; removed in the next release. Time from receiving a request to sending its response, in seconds.',
    labelNames: ['surface', 'route', 'method', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  // OpenTelemetry's http.server.request.duration, named and labelled as Prometheus exposes it.
  const serverDuration = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP server requests, from receiving a request to sending its response, in seconds.',
    labelNames: ['http_request_method', 'http_route', 'http_response_status_code', 'graphql_operation'] as const,
    buckets: [...HTTP_SERVER_DURATION_BUCKETS],
    registers: [registry],
  });
  new Gauge({
    name: 'petstore_build_info',
    help: 'Always 1: the running version of the service and of Node.js, in its labels.',
    labelNames: ['version', 'node_version'] as const,
    registers: [registry],
  }).set({ version: packageVersion(), node_version: process.version }, 1);
  const deprecated = new Counter({
    name: 'petstore_deprecated_calls_total',
    help: 'Calls of deprecated operations (getPet, GraphQL Query.pet), by API key id.',
    labelNames: ['operation', 'api_key_id'] as const,
    registers: [registry],
  });
  const sockets = new Gauge({
    name: 'petstore_websocket_connections',
    help: 'Open WebSocket connections on /graphql (subscriptions), authenticated or not yet.',
    registers: [registry],
  });
  const subscriptions = new Gauge({
    name: 'petstore_subscriptions_active',
    help: 'GraphQL subscriptions running over WebSocket.',
    registers: [registry],
  });
  const delivered = new Counter({
    name: 'petstore_subscription_events_total',
    help: 'Deprecated: use petstore_feed_delivered_events_total; removed in the next release. Subscription events sent to subscribers (one per subscriber), by subscription field.',
    labelNames: ['subscription'] as const,
    registers: [registry],
  });
  const eventStreams = new Gauge({
    name: 'petstore_event_streams',
    help: 'Deprecated: use petstore_feed_active_streams{transport="sse"}; removed in the next release. Open server-sent event streams of GET /v1/events.',
    registers: [registry],
  });
  // OpenTelemetry's naming (`petstore.feed.active_streams`, an UpDownCounter as http.server.active_requests is;
  // `petstore.feed.delivered_events`, a Counter), as Prometheus exposes them.
  const feedStreams = new Gauge({
    name: 'petstore_feed_active_streams',
    help: 'Streams following the change feed on this instance, by transport: sse (GET /v1/events streams), websocket (authenticated GraphQL WebSockets), webhook (endpoints this instance is delivering to).',
    labelNames: ['transport'] as const,
    registers: [registry],
  });
  const feedDeliveries = new Counter({
    name: 'petstore_feed_delivered_events_total',
    help: 'Change-feed events this instance handed to its streams (one per stream), by transport: sse, websocket, webhook (a delivery its endpoint acknowledged).',
    labelNames: ['transport'] as const,
    registers: [registry],
  });
  const byTransport = {
    streams: { sse: feedStreams.labels('sse'), websocket: feedStreams.labels('websocket'), webhook: feedStreams.labels('webhook') },
    deliveries: { sse: feedDeliveries.labels('sse'), websocket: feedDeliveries.labels('websocket'), webhook: feedDeliveries.labels('webhook') },
  };
  const databases: Database[] = [];
  const watchedNodes = () => databases.flatMap((database) => database.nodes);
  new Gauge({
    name: 'petstore_db_pool_connections',
    help: 'Database pool usage: open connections (total), idle ones, the limit, and requests waiting for a connection.',
    labelNames: ['node', 'state'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const node of watchedNodes()) {
        const usage = node.poolUsage();
        if (!usage) continue;
        for (const state of ['total', 'idle', 'waiting', 'limit'] as const) this.set({ node: node.name, state }, usage[state]);
      }
    },
  });
  new Gauge({
    name: 'petstore_db_node_ready',
    help: 'Database servers at the latest check (every second with replicas): 1 when the primary can serve or a replica is in the read rotation.',
    labelNames: ['node', 'role'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { state } of watchedNodes()) this.set({ node: state.name, role: state.role }, state.ready ? 1 : 0);
    },
  });
  new Gauge({
    name: 'petstore_db_replica_lag_seconds',
    help: 'How far each read replica is behind its source, in seconds, as it reports it (absent while its replication is stopped).',
    labelNames: ['node'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const { state } of watchedNodes()) if (typeof state.lagSeconds === 'number') this.set({ node: state.name }, state.lagSeconds);
    },
  });
  const feeds: (() => FeedState)[] = [];
  new Gauge({
    name: 'petstore_feed_position',
    help: 'The last change-feed position this instance has read and handed to its followers.',
    registers: [registry],
    collect() {
      for (const state of feeds) this.set(state().position);
    },
  });
  new Gauge({
    name: 'petstore_feed_followers',
    help: 'Change-feed followers on this instance: SSE streams and subscriptions.',
    registers: [registry],
    collect() {
      for (const state of feeds) this.set(state().followers);
    },
  });
  new Gauge({
    name: 'petstore_feed_sequencer_leader',
    help: 'Whether this instance held the sequencer lease at its latest claim (1) or not (0); one instance of a deployment has 1.',
    registers: [registry],
    collect() {
      for (const state of feeds) this.set(state().leading ? 1 : 0);
    },
  });
  new Counter({
    name: 'petstore_feed_stamped_total',
    help: 'Pets this instance stamped with their feed position as the sequencer.',
    registers: [registry],
    collect() {
      this.reset();
      for (const state of feeds) this.inc(state().stamped);
    },
  });
  const redisUp: (() => boolean)[] = [];
  // Registered by the first watcher: without REDIS_URL the series is absent, not a 0 that reads as an outage.
  const watchRedis = (up: () => boolean) => {
    if (redisUp.length === 0) {
      new Gauge({
        name: 'petstore_redis_up',
        help: 'Whether Redis (REDIS_URL) answers (1) or is away (0), rate limits then counted per instance or refused (RATE_LIMIT_ON_REDIS_FAILURE); absent without REDIS_URL.',
        registers: [registry],
        collect() {
          for (const watched of redisUp) this.set(watched() ? 1 : 0);
        },
      });
    }
    redisUp.push(up);
  };
  return {
    registry,
    observeRequest: ({ surface, route, graphqlOperation, method, status }, seconds) => {
      duration.observe({ surface, route: graphqlOperation ?? route ?? 'unmatched', method, status: String(status) }, seconds);
      serverDuration.observe(
        {
          http_request_method: KNOWN_METHODS.has(method) ? method : '_OTHER',
          http_response_status_code: String(status),
          ...(route !== undefined && { http_route: route }),
          ...(graphqlOperation !== undefined && { graphql_operation: graphqlOperation }),
        },
        seconds,
      );
    },
    countDeprecatedCall: (operation, apiKeyId) => deprecated.inc({ operation, api_key_id: String(apiKeyId) }),
    watchDatabase: (database) => void databases.push(database),
    watchFeed: (state) => void feeds.push(state),
    countOpenSocket: (delta) => sockets.inc(delta),
    countFeedStream: (transport, delta) => {
      byTransport.streams[transport].inc(delta);
      if (transport === 'sse') eventStreams.inc(delta);
    },
    countFeedDelivery: (transport) => byTransport.deliveries[transport].inc(),
    countActiveSubscription: (delta) => subscriptions.inc(delta),
    countDeliveredEvent: (subscription) => delivered.inc({ subscription }),
    watchRedis,
  };
}
