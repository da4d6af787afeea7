import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { LRUCache } from 'lru-cache';
import { type DataSource, IsNull, type Repository } from 'typeorm';
import { withinDeadline } from '../database/database-deadline';
import { ApiKey } from './api-key.entity';

/** Recognisable prefix of every key, so secret scanners can find leaked ones. */
export const API_KEY_PREFIX = 'pst_';

/** `pst_`, 43 base64url characters of secret (32 random bytes), 6 of CRC-32 checksum. */
const KEY_FORMAT = /^pst_([A-Za-z0-9_-]{43})([A-Za-z0-9_-]{6})$/;

function checksum(secret: string): string {
  return Buffer.from(crc32(secret).toString(16).padStart(8, '0'), 'hex').toString('base64url');
}

function hashKey(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/**
 * Makes a new key: `pst_`, 32 random bytes (256 bits) in base64url, then the CRC-32 checksum
 * of that secret in base64url (53 characters in all; README "API keys"). Nothing is stored.
 *
 * @returns the key.
 */
export function generateApiKey(): string {
  const secret = randomBytes(32).toString('base64url');
  return API_KEY_PREFIX + secret + checksum(secret);
}

/**
 * Tells whether a string can be one of our keys: the right shape and a checksum that matches.
 * A mistyped or truncated key fails here, before any database lookup.
 *
 * @param key - the bearer token as sent.
 */
export function isWellFormedApiKey(key: string): boolean {
  const match = KEY_FORMAT.exec(key);
  return match !== null && match[2] === checksum(match[1]);
}

/** The cache of found keys: at most this many, each trusted this long without asking the database. */
export const API_KEY_CACHE = Object.freeze({ maxEntries: 10_000, ttlMs: 5_000 });

/** Keys found active, by hex hash; `generation` counts revocations, so a lookup that raced one is not cached. */
interface KeyCache {
  found: LRUCache<string, ApiKey>;
  generation: number;
}

/**
 * One cache per database, shared by every ApiKeyService of this process on that DataSource:
 * a revoke through any of them empties it at once. Other processes (the `apikey` CLI, other
 * instances) revoke in the database only, which this process sees within the TTL.
 */
const caches = new WeakMap<DataSource, KeyCache>();

/**
 * Creates, lists, revokes and checks API keys (spec "Authentication"). A key is `pst_`, then
 * 32 random bytes in base64url, then a CRC-32 checksum (53 characters); only its SHA-256 hash
 * is stored. Keys found active are cached (bounded LRU, short TTL); unknown keys are not.
 */
export class ApiKeyService {
  private readonly cache: KeyCache;

  /**
   * @param keys - the TypeORM repository of {@link ApiKey}.
   * @param options.cacheTtlMs - how long a found key is trusted without a lookup, milliseconds
   *   (default {@link API_KEY_CACHE}.ttlMs; 0 turns the cache off). Bounds how late a revocation
   *   made by another process takes effect here.
   */
  constructor(
    private readonly keys: Repository<ApiKey>,
    private readonly options: { cacheTtlMs?: number } = {},
  ) {
    const dataSource = keys.manager.connection;
    let cache = caches.get(dataSource);
    if (!cache) {
      cache = { found: new LRUCache({ max: API_KEY_CACHE.maxEntries, ttl: API_KEY_CACHE.ttlMs }), generation: 0 };
      caches.set(dataSource, cache);
    }
    this.cache = cache;
  }

  /**
   * @param name - a label for the key (1-100 characters).
   * @returns the stored record and the key itself, which is not stored and cannot be shown again.
   * @throws RangeError for an empty or over-long name.
   */
  async create(name: string): Promise<{ apiKey: ApiKey; key: string }> {
    if (name.trim().length === 0 || name.length > 100) throw new RangeError('name must be 1 to 100 characters');
    const key = generateApiKey();
    const apiKey = this.keys.create({ name, keyHash: hashKey(key).toString('hex'), keyHint: key.slice(-4), revokedAt: null });
    await this.keys.save(apiKey);
    return { apiKey, key };
  }

  /** @returns every key record, revoked ones included, by ascending id. */
  list(): Promise<ApiKey[]> {
    return this.keys.find({ order: { id: 'ASC' } });
  }

  /** @returns how many keys are not revoked. */
  countActive(): Promise<number> {
    return this.keys.countBy({ revokedAt: IsNull() });
  }

  /**
   * Revokes a key at once.
   *
   * @param id - the key's id.
   * @returns false when no active key has that id.
   */
  async revoke(id: number): Promise<boolean> {
    const result = await this.keys.update({ id, revokedAt: IsNull() }, { revokedAt: new Date() });
    // Revocations are rare: forget every cached key rather than find this one's hash.
    this.cache.generation++;
    this.cache.found.clear();
    return (result.affected ?? 0) > 0;
  }

  /**
   * Finds the active key a client presented. A malformed key or a bad checksum is refused
   * without touching the database. Lookup is by SHA-256 hash, so the key itself never reaches
   * the database and lookup timing says nothing about stored keys; the hash found is then
   * compared again in constant time (the database's collation may ignore case). A key found
   * active is remembered for a few seconds (see the constructor), so most requests cost no lookup.
   *
   * @param key - the bearer token as sent.
   * @returns the key record, or null when malformed, unknown or revoked.
   * @throws DatabaseDeadlineError (503) when the lookup does not finish within its deadline.
   */
  async findActive(key: string): Promise<ApiKey | null> {
    if (!isWellFormedApiKey(key)) return null;
    const hash = hashKey(key);
    const hex = hash.toString('hex');
    const ttl = this.options.cacheTtlMs ?? API_KEY_CACHE.ttlMs;
    const cached = ttl > 0 ? this.cache.found.get(hex) : undefined;
    if (cached) return cached;
    const generation = this.cache.generation;
    const found = await withinDeadline(
      this.keys.manager.connection,
      (manager) => manager.getRepository(ApiKey).findOneBy({ keyHash: hex, revokedAt: IsNull() }),
      { mode: 'slave' },
    );
    if (!found || !timingSafeEqual(Buffer.from(found.keyHash, 'hex'), hash)) return null;
    if (ttl > 0 && generation === this.cache.generation) this.cache.found.set(hex, found, { ttl });
    return found;
  }
}
