import { LRUCache } from 'lru-cache';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { ApiKey } from './api-key.entity';
import { API_KEY_CACHE, API_KEY_LIMITS } from '../limits';

/** Records when each API key was last used (`last_used_at`, shown by `apikey list`), cheaply (docs/api-keys.md "Listing keys"). */
export class ApiKeyUsageRecorder {
  /** When this instance last wrote each key's `last_used_at` (Date.now()). */
  private readonly lastUseWrites = new LRUCache<number, number>({ max: API_KEY_CACHE.maxEntries });

  /** @param onError - a failed write (the request it came from is not failed for it). */
  constructor(
    private readonly database: Database,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {}

  /** Records a use of key `id`, at most once per API_KEY_LIMITS.lastUsedWriteMs in this instance; never waits. */
  noteUse(id: number): void {
    const now = Date.now();
    const written = this.lastUseWrites.get(id);
    if (written !== undefined && now - written < API_KEY_LIMITS.lastUsedWriteMs) return;
    this.lastUseWrites.set(id, now);
    withinDeadline(this.database, (manager) => manager.getRepository(ApiKey).update({ id }, { lastUsedAt: new Date(now) })).catch((error: unknown) => {
      this.lastUseWrites.delete(id);
      this.onError(error);
    });
  }
}
