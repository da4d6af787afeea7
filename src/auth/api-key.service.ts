import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { LRUCache } from 'lru-cache';
import { type DataSource, In, IsNull, type Repository } from 'typeorm';
import { withinDeadline } from '../database/database-deadline';
import { ApiKey } from './api-key.entity';
import { API_KEY_CACHE } from '../limits';

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
 * of that secret in base64url (53 characters in all; docs/api-keys.md). Nothing is stored.
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

/** A key found active: the record, and when (Date.now() milliseconds) it was found or created. */
interface FoundKey {
  apiKey: ApiKey;
  checkedAt: number;
}

/**
 * The caches of one database, by the key's hex hash. `found` and `refused` are separate LRUs
 * so that a flood of unknown keys cannot push real keys out. `generation` counts revocations,
 * so that a lookup that raced one caches nothing.
 */
interface KeyCache {
  found: LRUCache<string, FoundKey>;
  refused: LRUCache<string, true>;
  generation: number;
}

/**
 * One cache per database, shared by every ApiKeyService of this process on that DataSource:
 * a revoke through any of them takes effect at once. Other processes (the `apikey` CLI, other
 * instances) revoke in the database only, which this process sees within the TTL.
 */
const caches = new WeakMap<DataSource, KeyCache>();

/** What this process knows of a presented key without asking the database (see {@link ApiKeyService.recognise}). */
export type KeyRecognition =
  /** Not a key of ours: wrong shape or checksum. Never looked up. */
  | { state: 'malformed' }
  /** Found active within the cache time: no lookup needed. */
  | { state: 'trusted'; apiKey: ApiKey }
  /** Found active within the last hour, but its answer has expired: look it up again, on the key's account. */
  | { state: 'known'; apiKeyId: number }
  /** Found unknown or revoked within the cache time: refused without a lookup. */
  | { state: 'refused' }
  /** Never seen, or forgotten: only a lookup can tell. */
  | { state: 'unknown' };

/**
 * Creates, lists, revokes and checks API keys (spec "Authentication"). A key is `pst_`, then
 * 32 random bytes in base64url, then a CRC-32 checksum (53 characters); only its SHA-256 hash
 * is stored. Lookup answers are cached, found and not found alike (bounded LRUs, short TTL).
 */
export class ApiKeyService {
  private readonly cache: KeyCache;
  /** Lookups under way, by key hash: concurrent requests with one key share one lookup. */
  private readonly lookups = new Map<string, Promise<ApiKey | null>>();

  /**
   * @param keys - the TypeORM repository of {@link ApiKey}.
   * @param options.cacheTtlMs - how long a lookup's answer (found active, or unknown/revoked) is
   *   reused without asking again, milliseconds (default {@link API_KEY_CACHE}.ttlMs; 0: ask on
   *   every request). Bounds how late a revocation made by another process takes effect here.
   */
  constructor(
    private readonly keys: Repository<ApiKey>,
    private readonly options: { cacheTtlMs?: number } = {},
  ) {
    const dataSource = keys.manager.connection;
    let cache = caches.get(dataSource);
    if (!cache) {
      cache = {
        found: new LRUCache({ max: API_KEY_CACHE.maxEntries, ttl: API_KEY_CACHE.knownMs }),
        refused: new LRUCache({ max: API_KEY_CACHE.maxEntries, ttl: API_KEY_CACHE.ttlMs }),
        generation: 0,
      };
      caches.set(dataSource, cache);
    }
    this.cache = cache;
  }

  private get ttlMs(): number {
    return this.options.cacheTtlMs ?? API_KEY_CACHE.ttlMs;
  }

  /**
   * Creates a key; this process knows it from then on (as if it had been looked up).
   *
   * @param name - a label for the key (1-100 characters).
   * @returns the stored record and the key itself, which is not stored and cannot be shown again.
   * @throws RangeError for an empty or over-long name.
   */
  async create(name: string): Promise<{ apiKey: ApiKey; key: string }> {
    if (name.trim().length === 0 || name.length > 100) throw new RangeError('name must be 1 to 100 characters');
    const key = generateApiKey();
    const apiKey = this.keys.create({ name, keyHash: hashKey(key).toString('hex'), keyHint: key.slice(-4), revokedAt: null });
    await this.keys.save(apiKey);
    // This process knows the new key is active. (No one can have been refused it: 256 fresh random bits.)
    this.cache.refused.delete(apiKey.keyHash);
    this.cache.found.set(apiKey.keyHash, { apiKey, checkedAt: Date.now() });
    return { apiKey, key };
  }

  /** @returns every key record, revoked ones included, by ascending id. */
  list(): Promise<ApiKey[]> {
    return this.keys.find({ order: { id: 'ASC' } });
  }

  /**
   * Revokes a key at once: in this process, its next request is looked up again and refused.
   *
   * @param id - the key's id.
   * @returns false when no active key has that id.
   */
  async revoke(id: number): Promise<boolean> {
    const result = await this.keys.update({ id, revokedAt: IsNull() }, { revokedAt: new Date() });
    this.cache.generation++;
    // Forget this key only: the others stay trusted. Revocations are rare, the scan is bounded.
    const hashes = [...this.cache.found.entries()].filter(([, found]) => found.apiKey.id === id).map(([hex]) => hex);
    for (const hex of hashes) this.cache.found.delete(hex);
    return (result.affected ?? 0) > 0;
  }

  /**
   * Which of these keys are still active, asked of the database in one query, without the
   * cache: how open WebSocket connections learn, every cache period, that their key was revoked
   * by another process (docs/subscriptions.md).
   *
   * @param ids - key ids (duplicates allowed; none: no query).
   * @returns the subset of `ids` that exist and are not revoked.
   * @throws DatabaseDeadlineError (503) when the query does not finish within its deadline.
   */
  async activeIds(ids: Iterable<number>): Promise<Set<number>> {
    const wanted = [...new Set(ids)];
    if (wanted.length === 0) return new Set();
    const found = await withinDeadline(this.keys.manager.connection, (manager) =>
      manager.getRepository(ApiKey).find({ select: { id: true }, where: { id: In(wanted), revokedAt: IsNull() } }),
    );
    return new Set(found.map((apiKey) => apiKey.id));
  }

  /**
   * Tells what this process knows of a key without asking the database, so that the caller
   * can decide whose rate limit a lookup is charged to before making it (docs/security.md "Limits").
   *
   * @param key - the bearer token as sent.
   * @returns see {@link KeyRecognition}.
   */
  recognise(key: string): KeyRecognition {
    if (!isWellFormedApiKey(key)) return { state: 'malformed' };
    const hex = hashKey(key).toString('hex');
    const found = this.cache.found.get(hex);
    if (found) return Date.now() - found.checkedAt < this.ttlMs ? { state: 'trusted', apiKey: found.apiKey } : { state: 'known', apiKeyId: found.apiKey.id };
    return this.cache.refused.has(hex) ? { state: 'refused' } : { state: 'unknown' };
  }

  /**
   * Finds the active key a client presented. A malformed key or a bad checksum is refused
   * without touching the database, and so is a key whose lookup answered "unknown or revoked"
   * within the cache time. Lookup is by SHA-256 hash, so the key itself never reaches the
   * database and lookup timing says nothing about stored keys; the hash found is then compared
   * again in constant time (the database's collation may ignore case). Each answer is cached
   * (see the constructor), so most requests cost no lookup, and concurrent lookups of one key
   * are one lookup.
   *
   * @param key - the bearer token as sent.
   * @returns the key record, or null when malformed, unknown or revoked.
   * @throws DatabaseDeadlineError (503) when the lookup does not finish within its deadline.
   */
  async findActive(key: string): Promise<ApiKey | null> {
    const recognised = this.recognise(key);
    if (recognised.state === 'trusted') return recognised.apiKey;
    if (recognised.state === 'malformed' || recognised.state === 'refused') return null;
    const hash = hashKey(key);
    const hex = hash.toString('hex');
    const pending = this.lookups.get(hex);
    if (pending) return pending;
    const lookup = this.lookUp(hash, hex).finally(() => this.lookups.delete(hex));
    this.lookups.set(hex, lookup);
    return lookup;
  }

  /**
   * The lookup of `key` under way, if one is: requests that arrive with a key while its first
   * lookup runs wait for that one (docs/security.md "Limits": they are then charged to the key, not
   * to their address) instead of each looking it up.
   *
   * @returns a promise that settles when the lookup ends, or undefined when none runs.
   */
  lookupUnderWay(key: string): Promise<unknown> | undefined {
    return isWellFormedApiKey(key) ? this.lookups.get(hashKey(key).toString('hex')) : undefined;
  }

  /** One database lookup of a key's hash; caches the answer. */
  private async lookUp(hash: Buffer, hex: string): Promise<ApiKey | null> {
    const generation = this.cache.generation;
    const found = await withinDeadline(
      this.keys.manager.connection,
      (manager) => manager.getRepository(ApiKey).findOneBy({ keyHash: hex, revokedAt: IsNull() }),
      { mode: 'slave' },
    );
    const active = found && timingSafeEqual(Buffer.from(found.keyHash, 'hex'), hash) ? found : null;
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
