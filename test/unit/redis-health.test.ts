import { type RedisState, nextRedisState } from '../../src/observability/redis-health.monitor';
import { redisConnectionOptions } from '../../src/redis/redis.connections';
import { REDIS_TIMEOUTS } from '../../src/limits';

/** The rules of src/observability/redis-health.monitor.ts: one line per change of Redis's state (docs/failures.md "Redis"). */

describe('nextRedisState', () => {
  test.each<[RedisState, boolean, RedisState, 'lost' | 'back' | null]>([
    ['connecting', true, 'ok', null],
    ['connecting', false, 'degraded', 'lost'],
    ['ok', true, 'ok', null],
    ['ok', false, 'degraded', 'lost'],
    ['degraded', false, 'degraded', null],
    ['degraded', true, 'ok', 'back'],
  ])('when %p and Redis answering is %p, then %p, announced as %p', (current, answering, state, announce) => {
    expect(nextRedisState(current, answering)).toEqual({ state, announce });
  });

  test('when an outage repeats failures and ends, then it is announced once lost and once back', () => {
    const observations = [true, false, false, false, false, true, true, false, true];
    const announced: string[] = [];
    let state: RedisState = 'connecting';
    for (const answering of observations) {
      const next = nextRedisState(state, answering);
      if (next.announce) announced.push(next.announce);
      state = next.state;
    }
    expect(announced).toEqual(['lost', 'back', 'lost', 'back']);
  });
});

describe('redisConnectionOptions', () => {
  test('when reconnecting, then attempts grow but are never further apart than REDIS_TIMEOUTS.reconnectMaxMs', () => {
    const { retryStrategy } = redisConnectionOptions();
    const delays = [1, 2, 3, 5, 10, 100, 10_000].map((attempt) => retryStrategy!(attempt));
    expect(delays).toEqual([...delays].sort((x, y) => Number(x) - Number(y)));
    expect(Math.max(...(delays as number[]))).toBe(REDIS_TIMEOUTS.reconnectMaxMs);
    // Redis answering again is used within 2 s (docs/failures.md): one pause and one connection attempt fit well within.
    expect(REDIS_TIMEOUTS.reconnectMaxMs + REDIS_TIMEOUTS.connectMs).toBeLessThan(2000);
  });

  test('when given options, then they override the defaults', () => {
    expect(redisConnectionOptions({ connectTimeout: 5 }).connectTimeout).toBe(5);
  });
});
