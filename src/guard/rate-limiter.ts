import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors/error-catalogue';
import type { RedisHealthMonitor } from '../observability/redis-health.monitor';

/** What one rate-limited client may spend per window (docs/security.md "Limits"). */
export interface RateLimitConfig {
  readonly max: number;
  /** Per IP address without a valid key. */
  readonly unauthenticatedMax: number;
  readonly windowSeconds: number;
  /** Prefix of every counter's key (REDIS_NAMESPACE's `rate-limit:`), so deployments sharing a Redis count apart. */
  readonly counterPrefix: string;
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

/**
 * One fixed-window counter: `name` is unique per client (`ip:<address>`, `key:<id>`, `key:<id>:ip:<address>`); `quota`
 * is what it may spend per window.
 */
export interface RateLimitCounter {
  readonly name: string;
  readonly quota: number;
}

/** Fixed windows per counter, in memory or in Redis. */
export interface RateLimiter {
  /** The configured windows and default quotas. */
  readonly config: RateLimitConfig;
  /**
   * Charges all `units` to every one of `counters`, or nothing to any. `status` is the counter with the least left
   * (the one that refused, when one did). While Redis is away, counts in this instance's memory (`serve-local`), or
   * throws SERVICE_UNAVAILABLE (`refuse`: failing closed, so no client gets past its limit across instances).
   */
  charge(counters: readonly RateLimitCounter[], units: number): Promise<{ charged: boolean; status: RateLimitStatus }>;
  /**
   * Gives `units` of an earlier charge back to each of `counters` whose window is still the one charged, for an answer
   * that is not charged (a 304, docs/security.md "Limits"). Returns the counter with the least left after. Throws the
   * store's error when the counters cannot be reached.
   */
  refund(counters: readonly RateLimitCounter[], units: number): Promise<RateLimitStatus>;
}

/**
 * The rate limiter on rate-limiter-flexible; keys `<counterPrefix>key:<id>` and `<counterPrefix>ip:<address>`. With
 * `redis` (the health monitor of the instance's Redis, whose command connection it counts on), the counters are in Redis;
 * while its connection is not ready, rate-limiter-flexible's insurance limiter counts in memory (`serve-local`) or the
 * charge fails (`refuse`, the monitor's policy).
 */
export function createRateLimiter(config: RateLimitConfig, redis?: RedisHealthMonitor): RateLimiter {
  // One limiter per quota: quotas are few (the defaults and what operators set per key).
  const limiters = new Map<number, RateLimiterAbstract>();
  const limiterOf = (points: number): RateLimiterAbstract => {
    let limiter = limiters.get(points);
    if (!limiter) {
      const options = { points, duration: config.windowSeconds, keyPrefix: '' };
      limiter = redis
        ? new RateLimiterRedis({
            ...options,
            storeClient: redis.client,
            // A connection that is not ready fails at once, so a dead Redis holds no request.
            rejectIfRedisNotReady: true,
            // Without insurance, a Redis failure rejects with its Error (not a RateLimiterRes): refused below.
            ...(redis.policy === 'serve-local' && { insuranceLimiter: new RateLimiterMemory(options) }),
          })
        : new RateLimiterMemory(options);
      limiters.set(points, limiter);
    }
    return limiter;
  };
  const statusOf = (quota: number, result: RateLimiterRes | null): RateLimitStatus => ({
    quota,
    remaining: result ? Math.max(0, result.remainingPoints) : quota,
    resetSeconds: result ? Math.ceil(result.msBeforeNext / 1000) : config.windowSeconds,
    windowSeconds: config.windowSeconds,
  });
  const least = (statuses: RateLimitStatus[]) => statuses.reduce((a, b) => (b.remaining < a.remaining ? b : a));

  /** Charges one counter, all or none; a refusal spends nothing. */
  const chargeOne = async ({ name, quota }: RateLimitCounter, units: number) => {
    const limiter = limiterOf(quota);
    const counter = config.counterPrefix + name;
    const before = await limiter.get(counter);
    if (before && before.remainingPoints < units) return { charged: false, status: statusOf(quota, before) };
    try {
      return { charged: true, status: statusOf(quota, await limiter.consume(counter, units)) };
    } catch (refusal) {
      if (!(refusal instanceof RateLimiterRes)) throw refusal;
      // consume() keeps what it added when it refuses (a racing charge): given back, so a refusal spends nothing.
      return { charged: false, status: statusOf(quota, await limiter.reward(counter, units)) };
    }
  };

  return {
    config,
    async charge(counters, units) {
      try {
        const statuses: RateLimitStatus[] = [];
        for (const [index, counter] of counters.entries()) {
          const { charged, status } = await chargeOne(counter, units);
          if (!charged) {
            // Given back to the counters already charged, so a refusal spends nothing anywhere.
            for (const done of counters.slice(0, index)) await limiterOf(done.quota).reward(config.counterPrefix + done.name, units);
            return { charged: false, status };
          }
          statuses.push(status);
        }
        return { charged: true, status: least(statuses) };
      } catch {
        throw new AppError('SERVICE_UNAVAILABLE', 'The rate limit cannot be checked now: retry shortly.');
      }
    },
    async refund(counters, units) {
      const statuses: RateLimitStatus[] = [];
      for (const { name, quota } of counters) {
        const limiter = limiterOf(quota);
        const counter = config.counterPrefix + name;
        const current = await limiter.get(counter);
        // A window that ended since the charge holds none of it: a reward there would start one below zero.
        const charged = current !== null && current.consumedPoints >= units;
        statuses.push(statusOf(quota, charged ? await limiter.reward(counter, units) : current));
      }
      return least(statuses);
    },
  };
}
