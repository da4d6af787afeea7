import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { Redis } from 'ioredis';
import { AppError } from '../errors/error-catalogue';
import { REDIS_TIMEOUTS } from '../limits';

/** What one rate-limited client may spend (docs/security.md "Limits" and docs/configuration.md, RATE_LIMIT_* and REDIS_URL). */
export interface RateLimitConfig {
  /** Requests per window for one API key. */
  readonly max: number;
  /** Requests per window for one IP address without a valid key. */
  readonly unauthenticatedMax: number;
  readonly windowSeconds: number;
  /** Shared counters (several instances); in memory when absent. */
  readonly redisUrl?: string;
  /** Prefix of the counters' keys. */
  readonly namespace: string;
}

/** Whom a charge outside an HTTP request is counted against (WebSocket subscriptions): the key's counter, else the address's. */
export interface RateLimitedClient {
  readonly apiKeyId?: number;
  readonly ip: string;
}

/**
 * The rate limit's price of a request, one definition for both surfaces (docs/security.md "Limits"): one
 * unit per call it makes to the pet store, at least one. A call is a page of up to 100 pets, a
 * lookup, a create or a subscription; how much a page holds or selects is the GraphQL cost
 * limit's concern, not the rate limit's. So walking the list in pages of the same size costs the
 * same units over REST and GraphQL.
 * - REST: every operation is one call, charged by `limit` (below) as the request comes in;
 * - GraphQL over HTTP: one call per root field that runs, aliases and fragments included,
 *   `@skip`/`@include` applied, `__typename`, `__schema` and `__type` left out (cost-limit.plugin.ts
 *   `priceOf`); `limit` charged the first unit, `spend` charges the rest before it runs;
 * - a subscription: its one root field, charged by `spendFor` (subscription.server.ts).
 *
 * @param calls - the calls the request makes: 1 for REST, the root fields of a GraphQL operation.
 * @returns whole units, at least 1 (an operation of meta fields only, `{ __typename }`, is still a request).
 */
export function rateLimitUnits(calls: number): number {
  return Math.max(1, calls);
}

/** The policy name in the RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-10). */
const POLICY = 'default';

/**
 * Where a client's rate limit stands after everything a request was charged: what its
 * `RateLimit-Policy` and `RateLimit` header fields say (`"default";q=<quota>;w=<window>`,
 * `"default";r=<remaining>;t=<reset>`), and a GraphQL answer's `extensions.rateLimit`.
 */
export interface RateLimitStatus {
  /** Units per window (RATE_LIMIT_MAX for a key, RATE_LIMIT_UNAUTHENTICATED_MAX for an address). */
  readonly quota: number;
  /** Units left in the current window. */
  readonly remaining: number;
  /** Seconds until the window resets and `remaining` is `quota` again. */
  readonly resetSeconds: number;
  /** The window, in seconds (RATE_LIMIT_WINDOW_SECONDS). */
  readonly windowSeconds: number;
}

/**
 * Rate limiting with @fastify/rate-limit: per API key, or per IP address for requests without
 * a valid key. Counters are in memory, or in Redis when `redisUrl` is set, so that several
 * instances share them. One counter per client serves both the request itself and the extra
 * units a GraphQL operation of several calls is charged ({@link rateLimitUnits}, docs/security.md "Limits"). A refused request is 429 TOO_MANY_REQUESTS with
 * `Retry-After`; every limited answer carries `RateLimit-Policy` and `RateLimit`, which tell
 * what is left after everything the request was charged.
 *
 * @returns `limit`, the onRequest hook to run after `identify`, which charges the request 1 unit
 *   on its client's counter (the API key's, else the address's), once per client: run again
 *   after a key has been looked up, it charges the key too; and
 *   `spend`, which charges a request `units` more (GraphQL, by its calls): when fewer
 *   are left it charges none and throws the AppError TOO_MANY_REQUESTS, so that the operation
 *   does not run; and `spendFor`, the same charge for a client outside an HTTP request (a
 *   WebSocket connection or subscription, docs/subscriptions.md); and `statusOf`, the
 *   {@link RateLimitStatus} the answer's header fields are written from, for GraphQL's
 *   `extensions.rateLimit`.
 */
export async function createRateLimiter(
  app: FastifyInstance,
  config: RateLimitConfig,
): Promise<{
  limit: onRequestAsyncHookHandler;
  spend: (request: FastifyRequest, units: number) => Promise<void>;
  spendFor: (client: RateLimitedClient, units: number) => Promise<void>;
  statusOf: (request: FastifyRequest) => RateLimitStatus | undefined;
}> {
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: REDIS_TIMEOUTS.connectMs, commandTimeout: REDIS_TIMEOUTS.commandMs })
    : undefined;
  if (redis) {
    // ioredis reconnects by itself; without a listener it would print each failure as plain text.
    redis.on('error', (error) => app.log.warn({ err: error }, 'rate-limit store (Redis) unreachable'));
    app.addHook('onClose', async () => void (await redis.quit()));
  }
  const keyOf = (request: FastifyRequest) => (request.apiKeyId ? `key:${request.apiKeyId}` : `ip:${request.ip}`);
  const maxOf = (request: FastifyRequest) => (request.apiKeyId ? config.max : config.unauthenticatedMax);
  await app.register(fastifyRateLimit, {
    global: false,
    redis,
    nameSpace: config.namespace,
    skipOnError: false,
    max: async (request) => maxOf(request),
    timeWindow: config.windowSeconds * 1000,
    keyGenerator: keyOf,
  });
  // The plugin's own store: the door and GraphQL's extra units count on the same counters.
  const counter = app.createRateLimit();
  // What each request's counter said last; the window is the configuration's.
  const states = new WeakMap<FastifyRequest, Omit<RateLimitStatus, 'windowSeconds'>>();

  const tooMany = (seconds: number) => {
    const retryAfter = String(Math.max(1, seconds));
    return new AppError('TOO_MANY_REQUESTS', `Rate limit reached: retry in ${retryAfter} s.`, { 'Retry-After': retryAfter });
  };
  /**
   * Counts (or, with `increment: false`, reads) the request's counter and notes it for the header
   * fields. Counters that cannot be read refuse the request (fail closed: no client gets past its
   * limit while Redis is away) with 503, within the command timeout.
   */
  const count = async (request: FastifyRequest, increment = true) => {
    let result: Awaited<ReturnType<typeof counter>>;
    try {
      result = await counter(request, { increment });
    } catch {
      throw new AppError('SERVICE_UNAVAILABLE', 'The rate limit cannot be checked now: retry shortly.');
    }
    if (result.isAllowed) throw new Error('rate limit allow lists are not used'); // narrows the type
    states.set(request, { quota: result.max, remaining: result.remaining, resetSeconds: result.ttlInSeconds });
    return result;
  };

  app.addHook('onSend', async (request, reply: FastifyReply) => {
    const state = states.get(request);
    if (!state) return;
    reply.header('RateLimit-Policy', `"${POLICY}";q=${state.quota};w=${config.windowSeconds}`);
    reply.header('RateLimit', `"${POLICY}";r=${state.remaining};t=${state.resetSeconds}`);
  });

  // The clients each request has been counted against: `limit` counts each at most once.
  const counted = new WeakMap<FastifyRequest, Set<string>>();

  const spend = async (request: FastifyRequest, units: number) => {
    if (units <= 0) return;
    const before = await count(request, false);
    if (before.remaining < units) throw tooMany(before.ttlInSeconds);
    // Both stores add 1 at a time; a concurrent request of the same client may still win the last units.
    const after = await Promise.all(Array.from({ length: units }, () => count(request)));
    const last = after.reduce((highest, result) => (result.remaining < highest.remaining ? result : highest));
    states.set(request, { quota: last.max, remaining: last.remaining, resetSeconds: last.ttlInSeconds });
    if (last.isExceeded) throw tooMany(last.ttlInSeconds);
  };

  return {
    limit: async function limit(request) {
      const client = keyOf(request);
      const already = counted.get(request) ?? new Set<string>();
      if (already.has(client)) return;
      counted.set(request, already.add(client));
      const result = await count(request);
      if (result.isExceeded) throw tooMany(result.ttlInSeconds);
    },
    spend,
    /**
     * `spend` for a client outside an HTTP request (a WebSocket connection or subscription,
     * docs/subscriptions.md): the same counters, the same errors (TOO_MANY_REQUESTS, or
     * SERVICE_UNAVAILABLE when they cannot be read). The counter reads only the key id, the
     * address and the route's (absent) rate-limit settings of the request it is given.
     */
    spendFor: (client, units) => {
      const standIn = { apiKeyId: client.apiKeyId, ip: client.ip, routeOptions: { config: {} } } as unknown as FastifyRequest;
      return spend(standIn, units);
    },
    /**
     * Where the request's client stands now, as its RateLimit header fields will say, or
     * undefined when it was not counted (a route without a limit, counters that could not be read).
     */
    statusOf: (request) => {
      const state = states.get(request);
      return state && { ...state, windowSeconds: config.windowSeconds };
    },
  };
}
