import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/**
 * What B1, B1c and the GraphQL peers share: the API key check (with B1c's key cache when
 * KEY_CACHE_MS is set) and the exit on SIGTERM.
 */

/** The one indexed SELECT of a key lookup: a row when the key of this SHA-256 hash is active. */
export const ACTIVE_KEY_SQL = 'SELECT id FROM api_key WHERE key_hash = ? AND revoked_at IS NULL';

/** The body of a GraphQL peer's 401, as graphql-js would shape the error. */
export const UNAUTHENTICATED_GRAPHQL_BODY = JSON.stringify({ errors: [{ message: 'Unauthenticated', extensions: { code: 'UNAUTHENTICATED' } }] });

/**
 * The bearer key check: SHA-256 of the token, then `lookup` (one indexed SELECT, {@link ACTIVE_KEY_SQL}).
 * With KEY_CACHE_MS > 0 each answer (active, or unknown/revoked) is reused for that many
 * milliseconds, in an LRU of at most KEY_CACHE_MAX keys (default 10,000), as the service's key
 * cache does (`API_KEY_CACHE` in src/limits.ts).
 *
 * @param lookup - resolves whether the key of this hash is active.
 * @returns whether an Authorization header carries an active key.
 */
export function bearerKeyCheck(lookup: (hash: string) => Promise<boolean>): (authorization: string | undefined) => Promise<boolean> {
  const ttl = Number(process.env.KEY_CACHE_MS ?? 0);
  const cache = ttl > 0 ? new LRUCache<string, boolean>({ max: Number(process.env.KEY_CACHE_MAX ?? 10_000), ttl }) : undefined;
  return async (authorization) => {
    const key = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    if (!key) return false;
    const hash = createHash('sha256').update(key).digest('hex');
    const cached = cache?.get(hash);
    if (cached !== undefined) return cached;
    const active = await lookup(hash);
    cache?.set(hash, active);
    return active;
  };
}

/** Ends the process with the error, as an unhandled rejection would, but on purpose. */
export function fail(reason: unknown): never {
  console.error(reason);
  process.exit(1);
}

/** On SIGTERM (the bench's stop), runs `close` and exits: 0 once closed, 1 when closing failed. */
export function exitOnSigterm(close: () => Promise<unknown>): void {
  process.once('SIGTERM', () => {
    close().then(() => process.exit(0), fail);
  });
}
