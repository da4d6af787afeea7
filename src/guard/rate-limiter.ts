import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors/error-catalogue';
import { REDIS_TIMEOUTS } from '../limits';

/** What one rate-limited client may spend (docs/security.md "Limits" and docs/configuration.md, RATE_LIMIT_* and REDIS_URL). */
export interface RateLimitConfig {
  /** Units per window for one API key. */
  readonly max: number;
  /** Units per window for one IP address without a valid key. */
  readonly unauthenticatedMax: number;
  readonly windowSeconds: number;
  /** Shared counters (several instances); in memory when absent. */
  readonly redisUrl?: string;
  /** Prefix of the counters' keys. */
  readonly namespace: string;
}

/**
 * The rate limit's price of a request, one definition for both surfaces (docs/security.md "Limits"):
 * one unit per call to the pet store (a page of up to 100 pets, a lookup, a create, a subscription),
 * at least one. REST: 1 per request; GraphQL: 1 per root field that runs (document-check.ts `priceOf`).
 *
 * @param calls - 1 for REST, the root fields of a GraphQL operation.
 * @returns whole units, at least 1.
 */
export function rateLimitUnits(calls: number): number {
  return Math.max(1, calls);
}

/**
 * Where a client's rate limit stands after a charge: what its `RateLimit-Policy` and `RateLimit`
 * header fields say (`"default";q=<quota>;w=<window>`, `"default";r=<remaining>;t=<reset>`), and a
 * GraphQL answer's `extensions.rateLimit`.
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

/** Whose counter a charge goes to: an API key's, or a client address's. */
export type RateLimitedClient = { apiKeyId: number } | { address: string };

/** The rate limiter: fixed windows per API key or per address, in memory or in Redis. */
export interface RateLimiter {
  /**
   * Charges `units` to `client`'s counter all at once, or none when fewer are left.
   *
   * @returns whether it was charged, and the counter's status after it.
   * @throws AppError SERVICE_UNAVAILABLE (503, Retry-After) when the counters cannot be read
   *   within {@link REDIS_TIMEOUTS}: no client gets past its limit while Redis is away.
   */
  charge(client: RateLimitedClient, units: number): Promise<{ charged: boolean; status: RateLimitStatus }>;
  close(): Promise<void>;
}

/**
 * The rate limiter of docs/security.md "Limits", on rate-limiter-flexible: RateLimiterRedis with
 * its own ioredis client when `config.redisUrl` is set (every instance shares the counters), else
 * RateLimiterMemory. Keys are `<namespace>key:<id>` and `<namespace>ip:<address>`.
 *
 * @param log - where an unreachable Redis is noted.
 */
export function createRateLimiter(config: RateLimitConfig, log: FastifyBaseLogger): RateLimiter {
  const redis = config.redisUrl
    ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: REDIS_TIMEOUTS.connectMs, commandTimeout: REDIS_TIMEOUTS.commandMs })
    : undefined;
  // ioredis reconnects by itself; without a listener it would print each failure as plain text.
  redis?.on('error', (error) => log.warn({ err: error }, 'rate-limit store (Redis) unreachable'));
  // No insurance limiter: a Redis failure rejects with its Error (not a RateLimiterRes), which fails closed below.
  const limiterOf = (points: number): RateLimiterAbstract => {
    const options = { points, duration: config.windowSeconds, keyPrefix: '' };
    return redis ? new RateLimiterRedis({ ...options, storeClient: redis }) : new RateLimiterMemory(options);
  };
  const perKey = limiterOf(config.max);
  const perAddress = limiterOf(config.unauthenticatedMax);
  const statusOf = (limiter: RateLimiterAbstract, result: RateLimiterRes | null): RateLimitStatus => ({
    quota: limiter.points,
    remaining: result ? result.remainingPoints : limiter.points,
    resetSeconds: result ? Math.ceil(result.msBeforeNext / 1000) : config.windowSeconds,
    windowSeconds: config.windowSeconds,
  });

  return {
    async charge(client, units) {
      const [limiter, key] = 'apiKeyId' in client ? [perKey, `key:${client.apiKeyId}`] : [perAddress, `ip:${client.address}`];
      const counter = config.namespace + key;
      try {
        const before = await limiter.get(counter);
        if (before && before.remainingPoints < units) return { charged: false, status: statusOf(limiter, before) };
        try {
          return { charged: true, status: statusOf(limiter, await limiter.consume(counter, units)) };
        } catch (refusal) {
          if (!(refusal instanceof RateLimiterRes)) throw refusal;
          // consume() keeps what it added when it refuses (a charge raced this one): given back, so a refused charge spends nothing.
          return { charged: false, status: statusOf(limiter, await limiter.reward(counter, units)) };
        }
      } catch {
        throw new AppError('SERVICE_UNAVAILABLE', 'The rate limit cannot be checked now: retry shortly.');
      }
    },
    close: async () => void (await redis?.quit()),
  };
}
