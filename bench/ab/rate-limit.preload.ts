import * as rateLimiter from '../../src/guard/rate-limiter';
import { announce, replaceFunction } from './replace-export';

/**
 * Without the rate limit: a limiter that admits every charge without counting and reports no
 * status, so no RateLimit headers or `extensions.rateLimit` either. The guard's API key check stays.
 */
replaceFunction(rateLimiter, 'createRateLimiter', 'src/guard/rate-limiter', () => () => ({
  charge: () => Promise.resolve({ charged: true, status: undefined as unknown as rateLimiter.RateLimitStatus }),
  close: () => Promise.resolve(),
}));
announce('rate limit off: createRateLimiter() admits every charge without counting');
