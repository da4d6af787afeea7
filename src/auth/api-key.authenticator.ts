import { timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { In, IsNull } from 'typeorm';
import type { Database } from '../database/database';
import { type DatabaseBudget, withinDeadline } from '../database/database-deadline';
import { ApiKey } from './api-key.entity';
import { type KeyKind, type Scope, hashKey, isWellFormedApiKey, parseStoredScopes } from './api-key-policy';
import type { KeyChanges } from './key-changes';
import { API_KEY_CACHE } from '../limits';

/** What the guard needs of an active key, read once from its row and cached with it. */
export interface Credential {
  readonly id: number;
  readonly kind: KeyKind;
  readonly scopes: ReadonlySet<Scope>;
  /** Allowed browser origins (publishable keys); null: any. */
  readonly origins: ReadonlySet<string> | null;
  /** Null: never. */
  readonly expiresAt: Date | null;
  /** Per rate-limit window; null: RATE_LIMIT_MAX. */
  readonly rateLimit: number | null;
  /** Whose rate-limit counter it spends: a rolled key shares its predecessor's. */
  readonly budgetKeyId: number;
}

/** The credential of a stored key's row. */
export function credentialOf(row: ApiKey): Credential {
  return {
    id: row.id,
    kind: row.kind,
    scopes: parseStoredScopes(row.scopes),
    origins: row.origins ? new Set(row.origins.split(' ')) : null,
    expiresAt: row.expiresAt,
    rateLimit: row.rateLimit,
    budgetKeyId: row.budgetKeyId ?? row.id,
  };
}

/** Whether `credential` has expired at `now` (ms): read from the row, so every instance agrees at the same instant. */
export function hasExpired(credential: Pick<Credential, 'expiresAt'>, now = Date.now()): boolean {
  return credential.expiresAt !== null && credential.expiresAt.getTime() <= now;
}

interface FoundKey {
  credential: Credential;
  /** Date.now() when found or created. */
  checkedAt: number;
}

/** What this process knows of a presented key without asking the database. */
export type KeyRecognition =
  | { state: 'malformed' }
  /** Found active within the cache time (it may have expired since: see {@link hasExpired}). */
  | { state: 'trusted'; credential: Credential }
  /** Found active within API_KEY_CACHE.knownMs, but its answer has expired: look it up again, on the key's account. */
  | { state: 'known'; apiKeyId: number }
  /** Found unknown or revoked within the cache time. */
  | { state: 'refused' }
  | { state: 'unknown' };

/**
 * Tells which stored key a client presented (spec "Authentication", docs/api-keys.md): looked up by its SHA-256 hash,
 * so the key never reaches the database and the lookup's timing says nothing about stored keys, and cached. A change
 * heard through `changes` (here, or announced by another process) drops the key from the cache at once; otherwise
 * another process's change takes effect here within `cacheTtlMs`.
 */
export class ApiKeyAuthenticator {
  /**
   * By the key's hex hash. Separate LRUs, so a flood of unknown keys cannot push real keys out.
   * `generation` counts changes, so a lookup that raced one caches nothing.
   */
  private readonly cache = {
    found: new LRUCache<string, FoundKey>({ max: API_KEY_CACHE.maxEntries, ttl: API_KEY_CACHE.knownMs }),
    refused: new LRUCache<string, true>({ max: API_KEY_CACHE.maxEntries, ttl: API_KEY_CACHE.ttlMs }),
    generation: 0,
  };
  /** Concurrent requests with one key share one lookup. */
  private readonly lookups = new Map<string, Promise<Credential | null>>();

  /**
   * @param cacheTtlMs - ms a lookup's answer is reused (0: never); bounds how late another process's change takes effect
   *   here when nothing tells this one.
   */
  constructor(
    private readonly database: Database,
    changes: KeyChanges,
    private readonly cacheTtlMs: number = API_KEY_CACHE.ttlMs,
  ) {
    changes.onForget((ids) => this.forget(ids));
  }

  /** Drops what is cached of keys `ids` (all found keys without ids), so their next use is looked up. */
  private forget(ids: readonly number[] | undefined): void {
    this.cache.generation++;
    if (ids === undefined) return this.cache.found.clear();
    if (ids.length === 0) return;
    const wanted = new Set(ids);
    // Changes are rare, the scan is bounded.
    const hashes = [...this.cache.found.entries()].filter(([, found]) => wanted.has(found.credential.id)).map(([hex]) => hex);
    for (const hex of hashes) this.cache.found.delete(hex);
  }

  /** Caches a key this process has just stored (created, or rolled to), so its first use is not looked up. */
  remember(apiKey: ApiKey): void {
    this.cache.refused.delete(apiKey.keyHash);
    this.cache.found.set(apiKey.keyHash, { credential: credentialOf(apiKey), checkedAt: Date.now() });
  }

  /** Lets the caller decide whose rate limit a lookup is charged to before making it (docs/security.md "Limits"). */
  recognise(key: string): KeyRecognition {
    if (!isWellFormedApiKey(key)) return { state: 'malformed' };
    const hex = hashKey(key);
    const found = this.cache.found.get(hex);
    if (found)
      return Date.now() - found.checkedAt < this.cacheTtlMs
        ? { state: 'trusted', credential: found.credential }
        : { state: 'known', apiKeyId: found.credential.id };
    return this.cache.refused.has(hex) ? { state: 'refused' } : { state: 'unknown' };
  }

  /**
   * The unrevoked key a client presented (expired or not: see {@link hasExpired}), or null. A lookup runs within
   * `budget` (the request's) when given; requests for the same key while it runs share it.
   * @throws DatabaseDeadlineError (503) past the lookup's deadline.
   */
  async find(key: string, budget?: DatabaseBudget): Promise<Credential | null> {
    const recognised = this.recognise(key);
    if (recognised.state === 'trusted') return recognised.credential;
    if (recognised.state === 'malformed' || recognised.state === 'refused') return null;
    const hex = hashKey(key);
    const pending = this.lookups.get(hex);
    if (pending) return pending;
    const lookup = this.lookUp(hex, budget).finally(() => this.lookups.delete(hex));
    this.lookups.set(hex, lookup);
    return lookup;
  }

  /** {@link find}, for an unexpired key only. */
  async findActive(key: string, budget?: DatabaseBudget): Promise<Credential | null> {
    const found = await this.find(key, budget);
    return found && !hasExpired(found) ? found : null;
  }

  /** Requests that wait for it are charged to the key, not their address (docs/security.md "Limits"). */
  lookupUnderWay(key: string): Promise<unknown> | undefined {
    return isWellFormedApiKey(key) ? this.lookups.get(hashKey(key)) : undefined;
  }

  /**
   * Which of `ids` are still active and unexpired, with their expiry (null: never), bypassing the cache: how open
   * streams learn of another process's revocation or roll (docs/events.md "Following").
   * @throws DatabaseDeadlineError (503) past the query's deadline.
   */
  async activeIds(ids: Iterable<number>): Promise<Map<number, Date | null>> {
    const wanted = [...new Set(ids)];
    if (wanted.length === 0) return new Map();
    const found = await withinDeadline(this.database, (manager) =>
      manager.getRepository(ApiKey).find({ select: { id: true, expiresAt: true }, where: { id: In(wanted), revokedAt: IsNull() } }),
    );
    return new Map(found.filter((row) => !hasExpired(row)).map((row) => [row.id, row.expiresAt]));
  }

  private async lookUp(hex: string, budget: DatabaseBudget | undefined): Promise<Credential | null> {
    const generation = this.cache.generation;
    const found = await withinDeadline(this.database, (manager) => manager.getRepository(ApiKey).findOneBy({ keyHash: hex, revokedAt: IsNull() }), {
      mode: 'slave',
      budget,
    });
    // Compared again: the database's collation may ignore case.
    const active = found && timingSafeEqual(Buffer.from(found.keyHash, 'hex'), Buffer.from(hex, 'hex')) ? credentialOf(found) : null;
    if (generation !== this.cache.generation) return active; // a change raced this lookup: cache nothing
    if (active) {
      this.cache.found.set(hex, { credential: active, checkedAt: Date.now() });
    } else {
      this.cache.found.delete(hex);
      if (this.cacheTtlMs > 0) this.cache.refused.set(hex, true, { ttl: this.cacheTtlMs });
    }
    return active;
  }
}
