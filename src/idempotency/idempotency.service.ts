import { createHash } from 'node:crypto';
import { type EntityManager, LessThan } from 'typeorm';
import type { Database } from '../database/database';
import { type DatabaseBudget, withinDeadline } from '../database/database-deadline';
import { CommitOutcomeUnknownError, isConflict, isDatabaseUnavailable } from '../database/database-errors';
import { AppError } from '../errors/error-catalogue';
import { IdempotencyRecord } from './idempotency-record.entity';
import { IDEMPOTENCY_LIMITS } from '../limits';

/**
 * Idempotent creates, as docs/idempotency.md tells them. An in-flight row is committed first, then the work and the row's
 * completion commit together, so a request cut off midway leaves no pet and its key can be retried.
 */
export class IdempotencyService {
  constructor(private readonly database: Database) {}

  /**
   * Runs `work` (in the transaction) once per (apiKeyId, key); later calls with the same `input` get `replay`'s result.
   * Every step runs within `budget` (the request's) when given.
   * @throws AppError IDEMPOTENCY_KEY_IN_USE (409), IDEMPOTENCY_KEY_REUSED (422); DatabaseDeadlineError (503); CommitOutcomeUnknownError (504).
   */
  async once<T extends { id: number }>(
    scope: { apiKeyId: number; key: string },
    input: unknown,
    work: (manager: EntityManager) => Promise<T>,
    replay: (id: number, manager: EntityManager) => Promise<T | null>,
    budget?: DatabaseBudget,
  ): Promise<T> {
    const requestHash = createHash('sha256').update(JSON.stringify(input)).digest('hex');
    const record = await this.claim(scope, requestHash, budget);
    if (record.requestHash !== requestHash) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED');
    }
    if (record.petId !== null) {
      const petId = record.petId;
      // On the primary (withinDeadline's default): a read replica may not have the pet yet.
      const previous = await withinDeadline(this.database, (manager) => replay(petId, manager), { budget });
      if (previous) return previous;
    } else if (!record.claimedNow) {
      throw new AppError('IDEMPOTENCY_KEY_IN_USE');
    }
    try {
      return await withinDeadline(
        this.database,
        async (manager) => {
          const result = await work(manager);
          await manager.getRepository(IdempotencyRecord).update({ id: record.id }, { petId: result.id });
          return result;
        },
        { transaction: true, budget },
      );
    } catch (error) {
      // The record may hold the pet: keep it, so that a retry finds out.
      if (error instanceof CommitOutcomeUnknownError) throw error;
      // Nothing was created: free the key for a retry, without making the client wait while the database fails
      // (an abandoned claim is taken over anyway), outside the request's budget.
      const freed = withinDeadline(this.database, (manager) => manager.getRepository(IdempotencyRecord).delete({ id: record.id }));
      if (isDatabaseUnavailable(error)) freed.catch(() => undefined);
      else await freed;
      throw error;
    }
  }

  /** Returns how many were deleted. */
  async purgeExpired(now = new Date()): Promise<number> {
    const result = await this.database.writer
      .getRepository(IdempotencyRecord)
      .delete({ createdAt: LessThan(new Date(now.getTime() - IDEMPOTENCY_LIMITS.retentionMs)) });
    return result.affected ?? 0;
  }

  /** Inserts the in-flight row, or finds the existing one, taking it over when expired or abandoned. */
  private async claim(
    scope: { apiKeyId: number; key: string },
    requestHash: string,
    budget: DatabaseBudget | undefined,
  ): Promise<IdempotencyRecord & { claimedNow: boolean }> {
    const records = this.database.writer.getRepository(IdempotencyRecord);
    const where = { apiKeyId: scope.apiKeyId, key: scope.key };
    const now = new Date();
    try {
      const fresh = records.create({ ...where, requestHash, petId: null, createdAt: now });
      await withinDeadline(this.database, (manager) => manager.getRepository(IdempotencyRecord).insert(fresh), { budget });
      return Object.assign(fresh, { claimedNow: true });
    } catch (error) {
      // A conflict: the same key claimed at the same moment on another Galera node.
      if (isDatabaseUnavailable(error) && !isConflict(error)) throw error;
      const existing = await withinDeadline(this.database, (manager) => manager.getRepository(IdempotencyRecord).findOneBy(where), { budget });
      if (!existing) throw error;
      const expired = existing.createdAt.getTime() < now.getTime() - IDEMPOTENCY_LIMITS.retentionMs;
      const abandoned = existing.petId === null && existing.createdAt.getTime() < now.getTime() - IDEMPOTENCY_LIMITS.abandonedAfterMs;
      if (expired || abandoned) {
        // Take over, only if nobody else did in between.
        const taken = await withinDeadline(
          this.database,
          (manager) =>
            manager.getRepository(IdempotencyRecord).update({ id: existing.id, createdAt: existing.createdAt }, { requestHash, petId: null, createdAt: now }),
          { budget },
        );
        if ((taken.affected ?? 0) === 1) return Object.assign(existing, { requestHash, petId: null, createdAt: now, claimedNow: true });
      }
      return Object.assign(existing, { claimedNow: false });
    }
  }
}
