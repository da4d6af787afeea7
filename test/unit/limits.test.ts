import * as limits from '../../src/limits';
import {
  API_KEY_CACHE,
  DATABASE_DEADLINES,
  DOCUMENT_CACHE_LIMITS,
  FOLLOWER_LIMITS,
  HEAP_CAP_NODE_OPTION,
  HEAP_LIMITS,
  HTTP_LIMITS,
  IDEMPOTENCY_LIMITS,
  MIGRATION_LOCK,
  PET_FEED_LIMITS,
  PET_LIMITS,
  QUERY_LIMITS,
  REDIS_TIMEOUTS,
  SUBSCRIPTION_LIMITS,
} from '../../src/limits';

/** Every limit and timeout (src/limits.ts): frozen, whole numbers, and the relations between them that the code relies on. */

const MiB = 1024 * 1024;
const OBJECTS = Object.entries(limits as Record<string, unknown>).filter((entry): entry is [string, Record<string, unknown>] => typeof entry[1] === 'object');

describe('the limit objects', () => {
  test('when listed, then every export is a group of limits but the heap flag, a string', () => {
    expect(OBJECTS.length).toBeGreaterThan(10);
    expect(Object.entries(limits).filter(([, value]) => typeof value !== 'object')).toEqual([['HEAP_CAP_NODE_OPTION', HEAP_CAP_NODE_OPTION]]);
  });

  test.each(OBJECTS)('when %s is changed at run time, then it refuses: frozen', (_name, group) => {
    expect(Object.isFrozen(group)).toBe(true);
    const [key] = Object.keys(group);
    const before = group[key];
    // Modules are strict code: assigning to a frozen property throws.
    expect(() => {
      group[key] = 0;
    }).toThrow(TypeError);
    expect(() => Object.defineProperty(group, 'added', { value: 1 })).toThrow(TypeError);
    expect(group[key]).toBe(before);
  });

  test.each(OBJECTS)('when %s is read, then every number is a positive safe integer', (_name, group) => {
    for (const [key, value] of Object.entries(group)) {
      if (typeof value !== 'number') continue;
      expect({ key, value, ok: Number.isSafeInteger(value) && value > 0 }).toEqual({ key, value, ok: true });
    }
  });
});

describe('PET_LIMITS', () => {
  test('when read, then the page size default lies within its bounds, which start at 1', () => {
    expect(PET_LIMITS.listMin).toBe(1);
    expect(PET_LIMITS.listMin).toBeLessThanOrEqual(PET_LIMITS.listDefault);
    expect(PET_LIMITS.listDefault).toBeLessThanOrEqual(PET_LIMITS.listMax);
    expect([PET_LIMITS.listMin, PET_LIMITS.listDefault, PET_LIMITS.listMax]).toEqual([1, 20, 100]);
  });

  test('when read, then ids stop at 2^53-1, the largest integer JSON clients hold exactly', () => {
    expect(PET_LIMITS.maxInt64).toBe(Number.MAX_SAFE_INTEGER);
    expect(PET_LIMITS.maxInt64).toBe(2 ** 53 - 1);
  });

  test('when read, then names hold 100 code points and cursors 100 characters', () => {
    expect({ name: PET_LIMITS.nameMaxLength, cursor: PET_LIMITS.cursorMaxLength }).toEqual({ name: 100, cursor: 100 });
  });
});

describe('QUERY_LIMITS', () => {
  test('when read, then the cost allows a whole number of database fields: 10', () => {
    expect(QUERY_LIMITS.maxCost % QUERY_LIMITS.databaseFieldMinCost).toBe(0);
    expect(QUERY_LIMITS.maxCost / QUERY_LIMITS.databaseFieldMinCost).toBe(10);
  });

  test('when read, then a full page of every Pet field (100 × 4) fits the cost, and a full connection page with pageInfo (705) too', () => {
    expect(PET_LIMITS.listMax * 4).toBeLessThanOrEqual(QUERY_LIMITS.maxCost);
    expect(PET_LIMITS.listMax * 7 + 5).toBeLessThanOrEqual(QUERY_LIMITS.maxCost);
  });

  test('when read, then one mutation per operation, as REST has one create per request', () => {
    expect(QUERY_LIMITS.maxMutations).toBe(1);
  });

  test('when read, then aliases and directives fit inside the token limit (each needs at least one token)', () => {
    expect(QUERY_LIMITS.maxAliases).toBeLessThan(QUERY_LIMITS.maxTokens);
    expect(QUERY_LIMITS.maxDirectives).toBeLessThan(QUERY_LIMITS.maxTokens);
  });
});

describe('HTTP_LIMITS and SUBSCRIPTION_LIMITS', () => {
  test('when read, then a REST body is no larger than a GraphQL body, and a WebSocket message is a GraphQL body', () => {
    expect(HTTP_LIMITS.restBodyBytes).toBeLessThanOrEqual(HTTP_LIMITS.graphqlBodyBytes);
    expect(SUBSCRIPTION_LIMITS.maxMessageBytes).toBe(HTTP_LIMITS.graphqlBodyBytes);
    expect(FOLLOWER_LIMITS.maxBufferedBytes).toBeGreaterThanOrEqual(SUBSCRIPTION_LIMITS.maxMessageBytes);
  });

  test('when read, then keep-alive and the timeout check are shorter than the request timeout', () => {
    expect(HTTP_LIMITS.keepAliveTimeoutMs).toBeLessThan(HTTP_LIMITS.requestTimeoutMs);
    expect(HTTP_LIMITS.timeoutCheckIntervalMs).toBeLessThan(HTTP_LIMITS.requestTimeoutMs);
  });

  test('when read, then one address may hold as many pending sockets as one key holds connections', () => {
    expect(SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress).toBe(FOLLOWER_LIMITS.maxStreamsPerKey);
  });

  test('when read, then a stream pauses well before its byte bound, and a stalled reader is cut before the keep-alive would drop it', () => {
    expect(FOLLOWER_LIMITS.pauseAtBytes * 4).toBeLessThanOrEqual(FOLLOWER_LIMITS.maxBufferedBytes);
    expect(FOLLOWER_LIMITS.stalledReaderMs).toBeLessThan(2 * SUBSCRIPTION_LIMITS.keepAliveMs);
  });

  test('when read, then a socket must authenticate before the first keep-alive, and a close handshake is shorter than either', () => {
    expect(SUBSCRIPTION_LIMITS.connectionInitWaitMs).toBeLessThan(SUBSCRIPTION_LIMITS.keepAliveMs);
    expect(SUBSCRIPTION_LIMITS.closeHandshakeMs).toBeLessThan(SUBSCRIPTION_LIMITS.connectionInitWaitMs);
  });
});

describe('IDEMPOTENCY_LIMITS', () => {
  test('when read, then a key is abandoned after two request timeouts, purged hourly and kept a day', () => {
    expect(IDEMPOTENCY_LIMITS.abandonedAfterMs).toBe(2 * HTTP_LIMITS.requestTimeoutMs);
    expect(IDEMPOTENCY_LIMITS.purgeIntervalMs).toBe(60 * 60 * 1000);
    expect(IDEMPOTENCY_LIMITS.retentionMs).toBe(24 * 60 * 60 * 1000);
    expect(IDEMPOTENCY_LIMITS.purgeIntervalMs).toBeLessThan(IDEMPOTENCY_LIMITS.retentionMs);
  });

  test.each([
    ['a single visible character', '!', true],
    ['a UUID', '4f0c7a7e-3d5e-4b3b-9f1e-2a9d1c6b5e10', true],
    ['inner spaces', 'a b', true],
    ['a leading space', ' a', false],
    ['a tab', 'a\tb', false],
    ['DEL', 'a\u007f', false],
    ['non-ASCII', 'clé', false],
    ['empty', '', false],
  ])('when a key is %s, then the key pattern matches: %p', (_case, key, matches) => {
    expect(new RegExp(IDEMPOTENCY_LIMITS.keyPattern).test(key)).toBe(matches);
  });

  test('when read, then a key holds at most 255 characters', () => {
    expect(IDEMPOTENCY_LIMITS.maxKeyLength).toBe(255);
  });
});

describe('the heap and the document caches', () => {
  test('when read, then the heap flag states the cap', () => {
    expect(HEAP_LIMITS.maxOldSpaceMb).toBe(128);
    expect(HEAP_CAP_NODE_OPTION).toBe('--max-old-space-size=128');
  });

  test('when read, then the caches always on (documents, compiled operations, prices) take no more than a fifth of the heap cap', () => {
    const alwaysOn = DOCUMENT_CACHE_LIMITS.documentStoreBytes + DOCUMENT_CACHE_LIMITS.compiledOperationBytes + DOCUMENT_CACHE_LIMITS.priceBytes;
    expect(alwaysOn).toBe(25 * MiB);
    expect(alwaysOn).toBeLessThanOrEqual((HEAP_LIMITS.maxOldSpaceMb * MiB) / 5);
  });

  test('when the persisted-query cache is counted too, then the caches take 27 MiB, still under a quarter of the heap cap', () => {
    const all = Object.values(DOCUMENT_CACHE_LIMITS).reduce((sum, bytes) => sum + bytes, 0);
    expect(all).toBe(27 * MiB);
    expect(all).toBeLessThan((HEAP_LIMITS.maxOldSpaceMb * MiB) / 4);
  });
});

describe('DATABASE_DEADLINES and the rest', () => {
  test('when read, then connecting, readiness and a slow query each fit in one call deadline', () => {
    expect(DATABASE_DEADLINES.connectMs).toBeLessThanOrEqual(DATABASE_DEADLINES.callMs);
    expect(DATABASE_DEADLINES.readinessMs).toBeLessThan(DATABASE_DEADLINES.callMs);
    expect(DATABASE_DEADLINES.slowQueryMs).toBeLessThan(DATABASE_DEADLINES.callMs);
  });

  test('when a conflict is rerun, then the longest backoffs of every attempt still fit in the call deadline', () => {
    const attempts = Array.from({ length: DATABASE_DEADLINES.conflictAttempts - 1 }, (_, i) => DATABASE_DEADLINES.conflictBackoffMs * (i + 1));
    expect(attempts.reduce((sum, ms) => sum + ms, 0)).toBeLessThan(DATABASE_DEADLINES.callMs);
  });

  test('when read, then a call (2 s) ends well before the request timeout (10 s)', () => {
    expect(DATABASE_DEADLINES.callMs).toBeLessThan(HTTP_LIMITS.requestTimeoutMs);
  });

  test('when read, then the migration lease is renewed (a third of it) more often than it is retried for, and it is shorter than the wait', () => {
    expect(MIGRATION_LOCK.leaseSeconds).toBeLessThan(MIGRATION_LOCK.waitSeconds);
    expect(MIGRATION_LOCK.retryMs).toBeLessThan((MIGRATION_LOCK.leaseSeconds * 1000) / 3);
  });

  test('when read, then a dead feed leader is replaced and an event reaches every instance without Redis well within a second', () => {
    expect(PET_FEED_LIMITS.claimEveryMs).toBeLessThan(PET_FEED_LIMITS.leaseSeconds * 1000);
    expect(PET_FEED_LIMITS.stampEveryMs + PET_FEED_LIMITS.followEveryMs).toBeLessThanOrEqual(500);
    expect(PET_FEED_LIMITS.maxPageSize).toBeLessThanOrEqual(PET_FEED_LIMITS.readBatch);
  });

  test('when read, then a key lookup is reused for less time than a key stays known, and the minimum re-check is under that reuse', () => {
    expect(API_KEY_CACHE.ttlMs).toBeLessThan(API_KEY_CACHE.knownMs);
    expect(FOLLOWER_LIMITS.minKeyRecheckMs).toBeLessThanOrEqual(API_KEY_CACHE.ttlMs);
  });

  test('when read, then Redis answers within a request timeout', () => {
    expect(REDIS_TIMEOUTS.connectMs).toBeLessThan(HTTP_LIMITS.requestTimeoutMs);
    expect(REDIS_TIMEOUTS.commandMs).toBeLessThan(HTTP_LIMITS.requestTimeoutMs);
  });
});
