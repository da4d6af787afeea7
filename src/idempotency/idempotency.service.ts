import { createHash } from 'node:crypto';
import { type DataSource, type EntityManager, LessThan } from 'typeorm';
import { CommitOutcomeUnknownError, withinDeadline } from '../database/database-deadline';
import { isConflict, isDatabaseUnavailable } from '../database/database-errors';
import { AppError } from '../errors/error-catalogue';
import { IdempotencyRecord } from './idempotency-record.entity';
import { IDEMPOTENCY_LIMITS } from '../limits';

/**
 * Idempotent creates (IETF draft-ietf-httpapi-idempotency-key-header, Stripe's semantics).
 * Stored in the database, so they hold across restarts and instances.
 * - first request: an in-flight row is committed, then the work and the row's completion
 *   commit together (a request cut off midway leaves no pet, and can be retried);
 * - same key, same input, done: the first result is returned again (no second row);
 * - same key while the first is in flight: 409 IDEMPOTENCY_KEY_IN_USE;
 * - same key, other input: 422 IDEMPOTENCY_KEY_REUSED;
 * - a COMMIT the database never confirmed (504): the key keeps whatever was committed, so a
 *   retry replays the pet if it was stored, or runs once more after 20 s if it was not.
 * Each step is one database call within its deadline (`withinDeadline`). Knows neither GraphQL nor HTTP.
 */
export class IdempotencyService {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Runs `work` once per (apiKeyId, key).
   *
   * @param scope.apiKeyId - the caller's API key id; keys of different callers never meet.
   * @param scope.key - the Idempotency-Key as sent (1-255 printable ASCII characters).
   * @param input - the validated input; its fingerprint must match on a replay.
   * @param work - creates the resource with the given EntityManager (inside the transaction).
   * @param replay - loads the resource made by the first request, through the given
   *   EntityManager (on the primary: a read replica may not have it yet).
   * @returns the created or the replayed resource.
   * @throws AppError IDEMPOTENCY_KEY_IN_USE (409) or IDEMPOTENCY_KEY_REUSED (422);
   *   DatabaseDeadlineError (503) or CommitOutcomeUnknownError (504) when the database fails.
   */
  async once<T extends { id: number }>(
    scope: { apiKeyId: number; key: string },
    input: unknown,
    work: (manager: EntityManager) => Promise<T>,
    replay: (id: number, manager: EntityManager) => Promise<T | null>,
  ): Promise<T> {
    const requestHash = createHash('sha256').update(JSON.stringify(input)).digest('hex');
    const record = await this.claim(scope, requestHash);
    if (record.requestHash !== requestHash) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED');
    }
    if (record.petId !== null) {
      const petId = record.petId;
      // On the primary (withinDeadline's default): a read replica may not have the pet yet.
      const previous = await withinDeadline(this.dataSource, (manager) => replay(petId, manager));
      if (previous) return previous;
    } else if (!record.claimedNow) {
      throw new AppError('IDEMPOTENCY_KEY_IN_USE');
    }
    try {
      return await withinDeadline(
        this.dataSource,
        async (manager) => {
          const result = await work(manager);
          await manager.getRepository(IdempotencyRecord).update({ id: record.id }, { petId: result.id });
          return result;
        },
        { transaction: true },
      );
    } catch (error) {
      // The record may hold the pet: keep it, so that a retry finds out which.
      if (error instanceof CommitOutcomeUnknownError) throw error;
      // Nothing was created: free the key so that the client may retry. While the database
      // fails, the client is not kept waiting for that (the key is free after 20 s anyway).
      const freed = withinDeadline(this.dataSource, (manager) => manager.getRepository(IdempotencyRecord).delete({ id: record.id }), {
        background: true,
      });
      if (isDatabaseUnavailable(error)) freed.catch(() => undefined);
      else await freed;
      throw error;
    }
  }

  /** Deletes the keys older than the retention period; returns how many. */
  async purgeExpired(now = new Date()): Promise<number> {
    const result = await this.dataSource
      .getRepository(IdempotencyRecord)
      .delete({ createdAt: LessThan(new Date(now.getTime() - IDEMPOTENCY_LIMITS.retentionMs)) });
    return result.affected ?? 0;
  }

  /** Inserts the in-flight row, or finds the existing one (taking it over when abandoned). */
  private async claim(scope: { apiKeyId: number; key: string }, requestHash: string): Promise<IdempotencyRecord & { claimedNow: boolean }> {
    const records = this.dataSource.getRepository(IdempotencyRecord);
    const where = { apiKeyId: scope.apiKeyId, key: scope.key };
    const now = new Date();
    try {
      const fresh = records.create({ ...where, requestHash, petId: null, createdAt: now });
      await withinDeadline(this.dataSource, (manager) => manager.getRepository(IdempotencyRecord).insert(fresh));
      return Object.assign(fresh, { claimedNow: true });
    } catch (error) {
      // A conflict (the same key claimed at the same moment on another Galera node) means the row is there.
      if (isDatabaseUnavailable(error) && !isConflict(error)) throw error;
      const existing = await withinDeadline(this.dataSource, (manager) => manager.getRepository(IdempotencyRecord).findOneBy(where));
      if (!existing) throw error;
      const expired = existing.createdAt.getTime() < now.getTime() - IDEMPOTENCY_LIMITS.retentionMs;
      const abandoned = existing.petId === null && existing.createdAt.getTime() < now.getTime() - IDEMPOTENCY_LIMITS.abandonedAfterMs;
      if (expired || abandoned) {
        // Take over, only if nobody else did in between.
        const taken = await withinDeadline(this.dataSource, (manager) =>
          manager.getRepository(IdempotencyRecord).update({ id: existing.id, createdAt: existing.createdAt }, { requestHash, petId: null, createdAt: now }),
        );
        if ((taken.affected ?? 0) === 1) return Object.assign(existing, { requestHash, petId: null, createdAt: now, claimedNow: true });
      }
      return Object.assign(existing, { claimedNow: false });
    }
  }
}
