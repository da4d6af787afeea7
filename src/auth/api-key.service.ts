import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { IsNull, type Repository } from 'typeorm';
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
 * Tells whether a string can be one of our keys: the right shape and a checksum that matches.
 * A mistyped or truncated key fails here, before any database lookup.
 *
 * @param key - the bearer token as sent.
 */
export function isWellFormedApiKey(key: string): boolean {
  const match = KEY_FORMAT.exec(key);
  return match !== null && match[2] === checksum(match[1]);
}

/**
 * Creates, lists, revokes and checks API keys (spec "Authentication"). A key is `pst_`, then
 * 32 random bytes in base64url, then a CRC-32 checksum (53 characters); only its SHA-256 hash
 * is stored.
 */
export class ApiKeyService {
  /** @param keys - the TypeORM repository of {@link ApiKey}. */
  constructor(private readonly keys: Repository<ApiKey>) {}

  /**
   * @param name - a label for the key (1-100 characters).
   * @returns the stored record and the key itself, which is not stored and cannot be shown again.
   * @throws RangeError for an empty or over-long name.
   */
  async create(name: string): Promise<{ apiKey: ApiKey; key: string }> {
    if (name.trim().length === 0 || name.length > 100) throw new RangeError('name must be 1 to 100 characters');
    const secret = randomBytes(32).toString('base64url');
    const key = API_KEY_PREFIX + secret + checksum(secret);
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
    return (result.affected ?? 0) > 0;
  }

  /**
   * Finds the active key a client presented. A malformed key or a bad checksum is refused
   * without touching the database. Lookup is by SHA-256 hash, so the key itself never reaches
   * the database and lookup timing says nothing about stored keys; the hash found is then
   * compared again in constant time (the database's collation may ignore case).
   *
   * @param key - the bearer token as sent.
   * @returns the key record, or null when malformed, unknown or revoked.
   */
  async findActive(key: string): Promise<ApiKey | null> {
    if (!isWellFormedApiKey(key)) return null;
    const hash = hashKey(key);
    const found = await this.keys.findOneBy({ keyHash: hash.toString('hex'), revokedAt: IsNull() });
    return found && timingSafeEqual(Buffer.from(found.keyHash, 'hex'), hash) ? found : null;
  }
}
