/** Every limit and timeout, defined once (docs/security.md "Limits"); test/unit/limits-docs.test.ts keeps the docs in step. */

const KiB = 1024;
const MiB = 1024 * KiB;
const SECOND = 1000;

/** HTTP: bodies (413), request head (431) and how long a connection may hold a request (408). */
export const HTTP_LIMITS = Object.freeze({
  restBodyBytes: 16 * KiB,
  graphqlBodyBytes: 64 * KiB,
  /** Head and body together. */
  requestTimeoutMs: 10 * SECOND,
  /** Node closes 1 s after the announced timeout, so a client never reuses a closing connection. */
  keepAliveTimeoutMs: 5 * SECOND,
  /** Node's default (30 s) lets a stalled connection outlive requestTimeoutMs by that much. */
  timeoutCheckIntervalMs: SECOND,
  maxHeaderBytes: 16 * KiB,
  /** A longer path segment is 414. */
  maxParamLength: 100,
});

/** The pet operations, both surfaces (spec "Limits"). */
export const PET_LIMITS = Object.freeze({
  listMin: 1,
  listMax: 100,
  listDefault: 20,
  cursorMaxLength: 100,
  /** In code points, as MySQL counts VARCHAR characters. */
  nameMaxLength: 100,
  /** The largest integer JSON clients represent exactly. */
  maxInt64: Number.MAX_SAFE_INTEGER,
});

/** Idempotent creates (docs/idempotency.md). */
export const IDEMPOTENCY_LIMITS = Object.freeze({
  retentionMs: 24 * 60 * 60 * SECOND,
  purgeIntervalMs: 60 * 60 * SECOND,
  abandonedAfterMs: 2 * HTTP_LIMITS.requestTimeoutMs,
  maxKeyLength: 255,
  keyPattern: '^[\\x21-\\x7e][\\x20-\\x7e]*$',
});

/** One GraphQL operation (docs/security.md "Limits"); cost as graphql/query-limits.ts prices it. */
export const QUERY_LIMITS = Object.freeze({
  /** In fields; fragments add no level. */
  maxDepth: 6,
  maxAliases: 15,
  maxTokens: 1000,
  maxDirectives: 50,
  maxCost: 1000,
  /** So an operation holds at most maxCost / 100 database fields. */
  databaseFieldMinCost: 100,
  /** One create per operation, so one per Idempotency-Key as on REST. */
  maxMutations: 1,
  /** graphql-query-complexity's default. */
  maxPricedSelections: 10_000,
});

/** GraphQL subscriptions over WebSocket (docs/subscriptions.md "Limits"). */
export const SUBSCRIPTION_LIMITS = Object.freeze({
  maxSubscriptionsPerConnection: 10,
  /** Rate-limit units, charged on open. */
  connectionCost: 1,
  connectionInitWaitMs: 3 * SECOND,
  /** Unauthenticated sockets of one address: as many as one key may hold (FOLLOWER_LIMITS.maxStreamsPerKey). */
  maxPendingConnectionsPerAddress: 20,
  keepAliveMs: 12 * SECOND,
  maxMessageBytes: HTTP_LIMITS.graphqlBodyBytes,
  closeHandshakeMs: SECOND,
});

/**
 * Every follower of the change feed, whatever its transport: SSE streams of `GET /v1/events` and GraphQL WebSockets
 * (docs/events.md "Following"). One budget per key, one pacing rule, one key re-check.
 */
export const FOLLOWER_LIMITS = Object.freeze({
  /** SSE streams and WebSocket connections of one API key on one instance, together: each counts one. */
  maxStreamsPerKey: 20,
  /** Unsent bytes (the server's buffers and the socket's) at which a stream takes no more events until its client reads. */
  pauseAtBytes: 64 * KiB,
  /** A client that reads nothing this long while events wait for it is cut; it resumes from its cursor and loses nothing. */
  stalledReaderMs: 5 * SECOND,
  /** Never more than this waits for one client, whatever it is sent. */
  maxBufferedBytes: MiB,
  /** How often open streams' keys are looked up again when API_KEY_CACHE_SECONDS is 0 (else every that many seconds). */
  minKeyRecheckMs: SECOND,
  /** At shutdown, a client that has not taken its stream's end within this is cut. */
  closeMs: SECOND,
});

/** FOLLOWER_LIMITS' shape, for a test that shortens them. */
export type FollowerLimits = Readonly<Record<keyof typeof FOLLOWER_LIMITS, number>>;

/** The V8 heap cap (docs/configuration.md "Heap cap"). */
export const HEAP_LIMITS = Object.freeze({ maxOldSpaceMb: 128 });

/** Put first in NODE_OPTIONS, so an operator's own flag wins. */
export const HEAP_CAP_NODE_OPTION = `--max-old-space-size=${HEAP_LIMITS.maxOldSpaceMb}`;

/** Byte budgets of the GraphQL document caches (graphql/document-cache.ts): a fifth of the heap cap. */
export const DOCUMENT_CACHE_LIMITS = Object.freeze({
  documentStoreBytes: 8 * MiB,
  compiledOperationBytes: 16 * MiB,
  /** Automatic persisted queries only. */
  persistedQueryBytes: 2 * MiB,
  priceBytes: MiB,
});

/** How long database work may take (docs/failures.md "The database"). */
export const DATABASE_DEADLINES = Object.freeze({
  connectMs: SECOND,
  /** One call: pool wait, queue and every statement. */
  callMs: 2 * SECOND,
  readinessMs: 500,
  slowQueryMs: 500,
  /** Runs of a transaction losing a conflict (deadlock, certification), within one deadline. */
  conflictAttempts: 3,
  /** Randomised, per attempt. */
  conflictBackoffMs: 25,
  /** At start-up, the first retry to reach the database waits this long, each next one twice as long. */
  startupRetryMs: 500,
  poolSize: 10,
  /** Re-check of an unreachable node or a replica's lag. */
  nodeCheckIntervalMs: SECOND,
  /** DATABASE_REPLICA_MAX_LAG_SECONDS's default. */
  replicaMaxLagSeconds: 5,
});

/** The migration lock between instances starting at once (docs/operations.md "Scale-out notes"). */
export const MIGRATION_LOCK = Object.freeze({
  waitSeconds: 60,
  /** Renewed every third of it: a dead holder frees it within this time. */
  leaseSeconds: 30,
  retryMs: 250,
});

/**
 * The change feed (docs/events.md): the sequencer's lease and batches, how often an instance looks for new events without
 * a Redis poke, and what one reader may take or hold.
 */
export const PET_FEED_LIMITS = Object.freeze({
  /** A dead leader is replaced within this, plus one `claimEveryMs`. */
  leaseSeconds: 3,
  /** Every instance claims (the leader: renews) the lease this often. */
  claimEveryMs: SECOND,
  /** The leader looks for unstamped pets this often, and at once when poked. */
  stampEveryMs: 100,
  /** A poke waits this long after the previous stamp began, so that creates close together share one transaction. */
  minStampGapMs: 20,
  /** Pets stamped by one transaction. */
  stampBatch: 1_000,
  /** Every instance reads past its last event this often, and at once when poked. */
  followEveryMs: 200,
  /** Events one fan-out query reads. */
  readBatch: 500,
  /** Events one follower reads from the table at a time when it is further behind than the recent events. */
  replayBatch: 100,
  /** `GET /v1/events`'s `limit`: default and maximum. */
  defaultPageSize: 20,
  maxPageSize: 100,
  /** The latest events each instance keeps in memory, shared by its followers (about 300 bytes each). */
  recentEvents: 10_000,
  /** An SSE stream's heartbeat comment (under deploy/nginx.conf's 15 s read timeout, as the WebSocket keep-alive), and its `retry:` field. */
  heartbeatMs: 10 * SECOND,
  retryMs: SECOND,
});

/** PET_FEED_LIMITS' shape, for a test that shortens them. */
export type PetFeedLimits = Readonly<Record<keyof typeof PET_FEED_LIMITS, number>>;

/** API key caches: entries per LRU; lookup reuse (API_KEY_CACHE_SECONDS's default); how long a key stays "known". */
export const API_KEY_CACHE = Object.freeze({ maxEntries: 10_000, ttlMs: 5 * SECOND, knownMs: 60 * 60 * SECOND });

/** API keys (docs/api-keys.md): name in characters, lifetimes, origins, audit and the leaked-key revocation endpoint. */
export const API_KEY_LIMITS = Object.freeze({
  nameMaxLength: 100,
  /** A key's lifetime unless `--expires-in` or `--no-expiry` says otherwise. */
  defaultLifetimeMs: 90 * 24 * 60 * 60 * SECOND,
  /** How long a rolled key keeps working unless `--overlap` says otherwise. */
  defaultRollOverlapMs: 24 * 60 * 60 * SECOND,
  /** Allowed origins of one publishable key. */
  maxOrigins: 20,
  /** `last_used_at` is written at most this often per key and instance. */
  lastUsedWriteMs: 60 * SECOND,
  /** Keys in one `POST /v1/credentials/revoke`. */
  maxRevokedPerRequest: 100,
  /** A publishable key's key-wide ceiling, in multiples of its per-visitor quota, unless `--rate-limit` sets it. */
  publishableCeilingFactor: 100,
});

/** Redis (rate-limit counters, pet events, API key changes) and how fast an instance notices it leave and come back (docs/failures.md). */
export const REDIS_TIMEOUTS = Object.freeze({
  connectMs: SECOND,
  commandMs: SECOND,
  /** The longest pause between two reconnection attempts, so the shared state is used again within 2 s of Redis answering. */
  reconnectMaxMs: 500,
  /** A PING this often finds a Redis that stalls with its connections open (a failed one takes `commandMs`). */
  checkEveryMs: SECOND,
});

/** Tracing (docs/operations.md "Tracing"). */
export const TRACING_LIMITS = Object.freeze({
  /** After SIGTERM/SIGINT, how long the spans still buffered may take to export: a collector that is away does not hold the exit. */
  shutdownFlushMs: 2 * SECOND,
});

/** Webhook deliveries (docs/webhooks.md): one attempt's bounds, the leases on endpoints, what the CLI accepts. */
export const WEBHOOK_LIMITS = Object.freeze({
  /** One attempt, connection to the end of the answer's head; past it the attempt failed and is retried. */
  attemptTimeoutMs: 15 * SECOND,
  /** Of an answer's body, read and discarded; past it the connection is closed. */
  responseBodyBytes: 64 * KiB,
  /** An instance that died while delivering to an endpoint is replaced within this, plus one `claimEveryMs`. */
  leaseSeconds: 10,
  /** Every instance renews its leases and claims due endpoints this often. */
  claimEveryMs: 500,
  /** Endpoints one instance delivers to at once, each in order, none waiting for another. */
  maxConcurrentEndpoints: 16,
  /** Events an endpoint's delivery reads from the feed at a time (each is still sent and acknowledged alone). */
  eventsPerRead: 100,
  /** `Retry-After` on 429 and 503 is honoured up to this. */
  maxRetryAfterSeconds: 24 * 60 * 60,
  urlMaxLength: 2048,
  descriptionMaxLength: 200,
  /** Random bytes of a signing secret (`whsec_` and their base64). */
  secretBytes: 32,
  /** How long a rotated secret keeps signing unless `--overlap` says otherwise. */
  defaultRotateOverlapMs: 24 * 60 * 60 * SECOND,
  /** Of an answer's body, kept with its attempt as text (docs/admin.md "Delivery attempts"); the rest is read and dropped. */
  attemptBodyBytes: KiB,
  /**
   * Attempts are kept this long (docs/admin.md "Retention"), and at most `attemptsPerEndpoint` per endpoint, the newest;
   * finished recoveries this long too. A purge every `attemptPurgeEveryMs` deletes the rest.
   */
  attemptRetentionMs: 30 * 24 * 60 * 60 * SECOND,
  attemptsPerEndpoint: 1000,
  attemptPurgeEveryMs: 60 * 60 * SECOND,
  /** Redeliveries, or a recovery's events, one pass over an endpoint sends before its feed's own next events. */
  resendsPerPass: 100,
  /** The longest overlap a rotation may ask for. */
  maxRotateOverlapMs: 30 * 24 * 60 * 60 * SECOND,
});

/** The administration API's lists (docs/admin.md "Paging"): `limit`'s bounds and default. */
export const ADMIN_LIMITS = Object.freeze({
  listMin: 1,
  listMax: 100,
  listDefault: 20,
});

/** WEBHOOK_LIMITS' shape, for a test that shortens them. */
export type WebhookLimits = Readonly<Record<keyof typeof WEBHOOK_LIMITS, number>>;
