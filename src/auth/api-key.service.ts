import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { LRUCache } from 'lru-cache';
import { In, IsNull, type Repository } from 'typeorm';
import type { Database } from '../database/database';
import { type DatabaseBudget, withinDeadline } from '../database/database-deadline';
import { ApiKey } from './api-key.entity';
import { API_KEY_CACHE, API_KEY_LIMITS } from '../limits';

/** Recognisable prefix of every key, so secret scanners can find leaked ones. */
export const API_KEY_PREFIX = 'pst_';

/** `pst_`, 43 base64url characters of secret (32 random bytes), 6 of CRC-32 checksum. */
const KEY_FORMAT = /^pst_([A-Za-z0-9_-]{43})([A-Za-z0-9_-]{6})$/;

function checksum(secret: string): string {
  return Buffer.from(crc32(secret).toString(16).padStart(8, '0'), 'hex').toString('base64url');
}

/** The stored form of a key: its SHA-256, in hex (one-shot `hash`: no Hash object per request). */
function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** Makes a new key (docs/api-keys.md); nothing is stored. */
export function generateApiKey(): string {
  const secret = randomBytes(32).toString('base64url');
  return API_KEY_PREFIX + secret + checksum(secret);
}

/** Shape and checksum: a mistyped or truncated key fails here, before any database lookup. */
export function isWellFormedApiKey(key: string): boolean {
  const match = KEY_FORMAT.exec(key);
  return match !== null && match[2] === checksum(match[1]);
}

interface FoundKey {
  apiKey: ApiKey;
  /** Date.now() when found or created. */
  checkedAt: number;
}

/** What this process knows of a presented key without asking the database. */
export type KeyRecognition =
  | { state: 'malformed' }
  /** Found active within the cache time. */
  | { state: 'trusted'; apiKey: ApiKey }
  /** Found active within API_KEY_CACHE.knownMs, but its answer has expired: look it up again, on the key's account. */
  | { state: 'known'; apiKeyId: number }
  /** Found unknown or revoked within the cache time. */
  | { state: 'refused' }
  | { state: 'unknown' };

/**
 * Creates, lists, revokes and checks API keys (spec "Authentication"); only their SHA-256 hash is stored. A revocation
 * through this instance takes effect at once for whoever uses it (share it with the app: AppDependencies.apiKeys);
 * other instances and processes see it within their cache time.
 */
export class ApiKeyService {
  /**
   * By the key's hex hash. Separate LRUs, so a flood of unknown keys cannot push real keys out.
   * `generation` counts revocations, so a lookup that raced one caches nothing.
   */
  private readonly cache = {
    found: new LRUCache<string, FoundKey>({ max: API_KEY_CACHE.maxEntries, ttl: API_KEY_CACHE.knownMs }),
    refused: new LRUCache<string, true>({ max: API_KEY_CACHE.maxEntries, ttl: API_KEY_CACHE.ttlMs }),
    generation: 0,
  };
  /** Concurrent requests with one key share one lookup. */
  private readonly lookups = new Map<string, Promise<ApiKey | null>>();
  private readonly keys: Repository<ApiKey>;

  /** @param options.cacheTtlMs - ms a lookup's answer is reused (0: never); bounds how late another process's revocation takes effect here. */
  constructor(
    private readonly database: Database,
    private readonly options: { cacheTtlMs?: number } = {},
  ) {
    this.keys = database.writer.getRepository(ApiKey);
  }

  private get ttlMs(): number {
    return this.options.cacheTtlMs ?? API_KEY_CACHE.ttlMs;
  }

  /**
   * Creates a key; `key` is not stored and cannot be shown again.
   * @throws RangeError unless `name` has 1 to API_KEY_LIMITS.nameMaxLength (100) characters.
   */
  async create(name: string): Promise<{ apiKey: ApiKey; key: string }> {
    const most = API_KEY_LIMITS.nameMaxLength;
    if (name.trim().length === 0 || name.length > most) throw new RangeError(`name must be 1 to ${most} characters`);
    const key = generateApiKey();
    const apiKey = this.keys.create({ name, keyHash: hashKey(key), keyHint: key.slice(-4), revokedAt: null });
    await this.keys.save(apiKey);
    this.cache.refused.delete(apiKey.keyHash);
    this.cache.found.set(apiKey.keyHash, { apiKey, checkedAt: Date.now() });
    return { apiKey, key };
  }

  /** Every key, revoked ones included, by ascending id. */
  list(): Promise<ApiKey[]> {
    return this.keys.find({ order: { id: 'ASC' } });
  }

  /** Revokes a key, at once in this process; false when no active key has that id. */
  async revoke(id: number): Promise<boolean> {
    const result = await this.keys.update({ id, revokedAt: IsNull() }, { revokedAt: new Date() });
    this.cache.generation++;
    // Forget this key only. Revocations are rare, the scan is bounded.
    const hashes = [...this.cache.found.entries()].filter(([, found]) => found.apiKey.id === id).map(([hex]) => hex);
    for (const hex of hashes) this.cache.found.delete(hex);
    return (result.affected ?? 0) > 0;
  }

  /**
   * Which of `ids` are still active, bypassing the cache: how open WebSockets learn of another
   * process's revocation (docs/subscriptions.md).
   * @throws DatabaseDeadlineError (503) past the query's deadline.
   */
  async activeIds(ids: Iterable<number>): Promise<Set<number>> {
    const wanted = [...new Set(ids)];
    if (wanted.length === 0) return new Set();
    const found = await withinDeadline(this.database, (manager) =>
      manager.getRepository(ApiKey).find({ select: { id: true }, where: { id: In(wanted), revokedAt: IsNull() } }),
    );
    return new Set(found.map((apiKey) => apiKey.id));
  }

  /** Lets the caller decide whose rate limit a lookup is charged to before making it (docs/security.md "Limits"). */
  recognise(key: string): KeyRecognition {
    if (!isWellFormedApiKey(key)) return { state: 'malformed' };
    const hex = hashKey(key);
    const found = this.cache.found.get(hex);
    if (found) return Date.now() - found.checkedAt < this.ttlMs ? { state: 'trusted', apiKey: found.apiKey } : { state: 'known', apiKeyId: found.apiKey.id };
    return this.cache.refused.has(hex) ? { state: 'refused' } : { state: 'unknown' };
  }

  /**
   * The active key a client presented, or null. Looked up by SHA-256 hash, so the key never
   * reaches the database and lookup timing says nothing about stored keys.
   * A lookup runs within `budget` (the request's) when given; requests for the same key while it runs share it.
   * @throws DatabaseDeadlineError (503) past the lookup's deadline.
   */
  async findActive(key: string, budget?: DatabaseBudget): Promise<ApiKey | null> {
    const recognised = this.recognise(key);
    if (recognised.state === 'trusted') return recognised.apiKey;
    if (recognised.state === 'malformed' || recognised.state === 'refused') return null;
    const hex = hashKey(key);
    const pending = this.lookups.get(hex);
    if (pending) return pending;
    const lookup = this.lookUp(hex, budget).finally(() => this.lookups.delete(hex));
    this.lookups.set(hex, lookup);
    return lookup;
  }

  /** Requests that wait for it are charged to the key, not their address (docs/security.md "Limits"). */
  lookupUnderWay(key: string): Promise<unknown> | undefined {
    return isWellFormedApiKey(key) ? this.lookups.get(hashKey(key)) : undefined;
  }

  private async lookUp(hex: string, budget: DatabaseBudget | undefined): Promise<ApiKey | null> {
    const generation = this.cache.generation;
    const found = await withinDeadline(this.database, (manager) => manager.getRepository(ApiKey).findOneBy({ keyHash: hex, revokedAt: IsNull() }), {
      mode: 'slave',
      budget,
    });
    // Compared again: the database's collation may ignore case.
    const active = found && timingSafeEqual(Buffer.from(found.keyHash, 'hex'), Buffer.from(hex, 'hex')) ? found : null;
    if (generation !== this.cache.generation) return active; // a revocation raced this lookup: cache nothing
    if (active) {
      this.cache.found.set(hex, { apiKey: active, checkedAt: Date.now() });
    } else {
      this.cache.found.delete(hex);
      if (this.ttlMs > 0) this.cache.refused.set(hex, true, { ttl: this.ttlMs });
    }
    return active;
  }
}
