import { createHash, randomBytes } from 'node:crypto';
import { IsNull, type Repository } from 'typeorm';
import { ApiKey } from './api-key.entity';

/** Recognisable prefix of every key, so secret scanners can find leaked ones. */
export const API_KEY_PREFIX = 'pst_';

function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/**
 * Creates, lists, revokes and checks API keys (spec "Authentication"). Keys are
 * `pst_` followed by 32 random bytes in base64url (47 characters); only their SHA-256 hash
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
    const key = API_KEY_PREFIX + randomBytes(32).toString('base64url');
    const apiKey = this.keys.create({ name, keyHash: hashKey(key), keyHint: key.slice(-4), revokedAt: null });
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
   * Finds the active key a client presented. Lookup is by hash, so the key never reaches
   * the database and timing reveals nothing about stored keys.
   *
   * @param key - the bearer token as sent.
   * @returns the key record, or null when unknown or revoked.
   */
  findActive(key: string): Promise<ApiKey | null> {
    return this.keys.findOneBy({ keyHash: hashKey(key), revokedAt: IsNull() });
  }
}
