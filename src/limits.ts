/**
 * Every limit and timeout of the service, defined once (docs/security.md "Limits", docs/failures.md
 * "The database"). A value derived from another is computed here, never copied.
 * test/limits-docs.test.ts keeps the docs' limits table in step with these values.
 */

const KiB = 1024;
const MiB = 1024 * KiB;
const SECOND = 1000;

/** HTTP: bodies (413), request head (431) and how long a connection may hold a request (408). */
export const HTTP_LIMITS = Object.freeze({
  restBodyBytes: 16 * KiB,
  /** Room for large documents within the token limit. */
  graphqlBodyBytes: 64 * KiB,
  /** The whole request, head and body, must arrive within this time. */
  requestTimeoutMs: 10 * SECOND,
  /** Announced as `Keep-Alive: timeout=5`; Node closes one second later, so a client never reuses a closing connection. */
  keepAliveTimeoutMs: 5 * SECOND,
  /** The request timeout's precision: Node's default, 30 s, let a stalled connection live 40 s. */
  timeoutCheckIntervalMs: SECOND,
  maxHeaderBytes: 16 * KiB,
  /** A longer path segment (`petId`) is 414 (Fastify's maxParamLength). */
  maxParamLength: 100,
});

/** The pet operations, for both surfaces (spec "Limits"; docs/decisions.md for the choices the spec leaves open). */
export const PET_LIMITS = Object.freeze({
  listMin: 1,
  listMax: 100,
  listDefault: 20,
  /** The cursors this service writes are 24 to 40 characters. */
  cursorMaxLength: 100,
  /** In Unicode code points, as MySQL counts a VARCHAR's characters. */
  nameMaxLength: 100,
  /** Larger integers cannot be represented exactly by JSON clients. */
  maxInt64: Number.MAX_SAFE_INTEGER,
});

/** Idempotent creates (docs/idempotency.md). */
export const IDEMPOTENCY_LIMITS = Object.freeze({
  /** A key can be replayed this long; then it is purged and may be used again. */
  retentionMs: 24 * 60 * 60 * SECOND,
  purgeIntervalMs: 60 * 60 * SECOND,
  /** A request still unfinished after twice the request timeout was cut off. */
  abandonedAfterMs: 2 * HTTP_LIMITS.requestTimeoutMs,
  maxKeyLength: 255,
  /** Printable ASCII, spaces allowed except first. */
  keyPattern: '^[\\x21-\\x7e][\\x20-\\x7e]*$',
});

/**
 * One GraphQL operation (docs/security.md "Limits"): GraphQL Armor's limits tuned to this schema,
 * the parser's token limit, and the cost limit, priced by databaseFieldCost (graphql/query-limits.ts).
 */
export const QUERY_LIMITS = Object.freeze({
  /** Counted in fields: fragments add no level; introspection's `__schema` is exempt. */
  maxDepth: 6,
  /** `__typename` aliases included: each is a field to answer. */
  maxAliases: 15,
  maxTokens: 1000,
  maxDirectives: 50,
  maxCost: 1000,
  /** The least a field that reads or writes the database costs: an operation holds at most maxCost / 100 of them. */
  databaseFieldMinCost: 100,
  /** Root fields of the Mutation type: one create per operation and per Idempotency-Key, as on REST. */
  maxMutations: 1,
  /** Selections the pricing walks, fragments expanded, before it gives up (graphql-query-complexity's default). */
  maxPricedSelections: 10_000,
});

/** GraphQL subscriptions over WebSocket (docs/subscriptions.md "Limits"); the document limits are QUERY_LIMITS. */
export const SUBSCRIPTION_LIMITS = Object.freeze({
  maxSubscriptionsPerConnection: 10,
  /** Open connections of one API key on one instance. */
  maxConnectionsPerKey: 20,
  /** Rate-limit units a connection costs when it opens; each subscription costs its calls. */
  connectionCost: 1,
  connectionInitWaitMs: 3 * SECOND,
  /** Upgraded, unauthenticated sockets of one address: as many as one key may hold open. */
  maxPendingConnectionsPerAddress: 20,
  /** A peer that has not echoed one ping's random payload by the next ping is dropped. */
  keepAliveMs: 12 * SECOND,
  /** Bytes waiting for a peer that does not read; one more message closes its socket with 1008. */
  maxBufferedBytes: MiB,
  /** As the largest GraphQL HTTP body. */
  maxMessageBytes: HTTP_LIMITS.graphqlBodyBytes,
  /** How long a peer may take to answer a close before its socket is cut. */
  closeHandshakeMs: SECOND,
  /** How often open connections re-check their key when API_KEY_CACHE_SECONDS is 0. */
  minKeyRecheckMs: SECOND,
});

/** The V8 heap cap `npm start` and the Docker image run with (docs/configuration.md "Heap cap"). */
export const HEAP_LIMITS = Object.freeze({ maxOldSpaceMb: 128 });

/** The node option that sets the cap; put first in NODE_OPTIONS, so an operator's own flag wins. */
export const HEAP_CAP_NODE_OPTION = `--max-old-space-size=${HEAP_LIMITS.maxOldSpaceMb}`;

/**
 * Byte budgets of the caches keyed by GraphQL document; each entry weighs what it keeps alive,
 * source text included (graphql/document-cache.ts). Together about a fifth of the heap cap.
 */
export const DOCUMENT_CACHE_LIMITS = Object.freeze({
  /** Apollo's document store: each distinct document parsed and validated once. */
  documentStoreBytes: 8 * MiB,
  /** graphql-jit's compiled operations: generated code weighs more than its document. */
  compiledOperationBytes: 16 * MiB,
  /** Apollo's cache, used by automatic persisted queries only. */
  persistedQueryBytes: 2 * MiB,
  /** The cost limit's prices by (document hash, operation name, variables). */
  priceBytes: MiB,
});

/** How long database work may take (docs/failures.md "The database"). */
export const DATABASE_DEADLINES = Object.freeze({
  /** The driver's connect timeout. */
  connectMs: SECOND,
  /** One database call of a request: the wait for a pooled connection, its queue and every statement. */
  callMs: 2 * SECOND,
  /** `/readyz`'s check: a probe must get its answer quickly. */
  readinessMs: 500,
  /** Slower statements are logged at `warn`. */
  slowQueryMs: 500,
  /** Runs of a transaction that loses a conflict (deadlock, certification conflict), within its one deadline. */
  conflictAttempts: 3,
  /** The pause before a rerun grows by up to this much per attempt (randomised). */
  conflictBackoffMs: 25,
  /** Connections per database node. */
  poolSize: 10,
  /** How often a node marked unreachable, or a replica's lag, is checked again. */
  nodeCheckIntervalMs: SECOND,
  /** A replica further behind than this stops serving reads (DATABASE_REPLICA_MAX_LAG_SECONDS's default). */
  replicaMaxLagSeconds: 5,
});

/** The migration lock between instances starting at once (docs/operations.md "Scale-out notes"). */
export const MIGRATION_LOCK = Object.freeze({
  /** How long an instance waits for another's migrations before it gives up. */
  waitSeconds: 60,
  /** Renewed every third of it while held: a holder that died frees it within this time. */
  leaseSeconds: 30,
  retryMs: 250,
});

/**
 * The API key caches (docs/security.md "Limits"): entries per LRU; how long a lookup's answer is
 * reused (API_KEY_CACHE_SECONDS's default); how long a key found active is still counted as a key.
 */
export const API_KEY_CACHE = Object.freeze({ maxEntries: 10_000, ttlMs: 5 * SECOND, knownMs: 60 * 60 * SECOND });

/** Redis (rate-limit counters, pet events): to connect, and to answer one command. */
export const REDIS_TIMEOUTS = Object.freeze({ connectMs: SECOND, commandMs: SECOND });
