import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors/error-catalogue';
import { REDIS_TIMEOUTS } from '../limits';

/** What one rate-limited client may spend per window (docs/security.md "Limits"). */
export interface RateLimitConfig {
  readonly max: number;
  /** Per IP address without a valid key. */
  readonly unauthenticatedMax: number;
  readonly windowSeconds: number;
  /** Counters shared by instances; in memory when absent. */
  readonly redisUrl?: string;
  readonly namespace: string;
}

/** The rate limit's price of a request, for both surfaces: one unit per pet-store call, at least 1 (docs/security.md "Limits"). */
export function rateLimitUnits(calls: number): number {
  return Math.max(1, calls);
}

/** A client's rate limit after a charge, as the `RateLimit-Policy`/`RateLimit` headers and `extensions.rateLimit` state it. */
export interface RateLimitStatus {
  readonly quota: number;
  readonly remaining: number;
  readonly resetSeconds: number;
  readonly windowSeconds: number;
}

export type RateLimitedClient = { apiKeyId: number } | { address: string };

/** Fixed windows per API key or per address, in memory or in Redis. */
export interface RateLimiter {
  /**
   * Charges all `units` or none. Throws SERVICE_UNAVAILABLE when the counters cannot be read:
   * failing closed, so no client gets past its limit while Redis is away.
   */
  charge(client: RateLimitedClient, units: number): Promise<{ charged: boolean; status: RateLimitStatus }>;
  close(): Promise<void>;
}

/** The rate limiter on rate-limiter-flexible; keys `<namespace>key:<id>` and `<namespace>ip:<address>`. */
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
          // consume() keeps what it added when it refuses (a racing charge): given back, so a refusal spends nothing.
          return { charged: false, status: statusOf(limiter, await limiter.reward(counter, units)) };
        }
      } catch {
        throw new AppError('SERVICE_UNAVAILABLE', 'The rate limit cannot be checked now: retry shortly.');
      }
    },
    close: async () => void (await redis?.quit()),
  };
}
