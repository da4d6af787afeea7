import type { EntityManager } from 'typeorm';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { toSafeInteger } from '../database/int64';
import { WebhookRecovery } from './webhook-recovery.entity';
import { WebhookRedelivery } from './webhook-redelivery.entity';

/** How one attempt of a recovery ended, for its counts. */
export type RecoveryStep = 'sent' | 'failed';

/**
 * The `webhook_redelivery` and `webhook_recovery` tables (docs/admin.md "Redelivery", "Recovery"): the resends asked for
 * through the administration API, queued in the database so that whichever instance holds an endpoint's lease makes
 * them, after a restart too. Every call runs on the primary.
 */
export class WebhookResendRepository {
  constructor(private readonly database: Database) {}

  /**
   * Queues a redelivery of event `eventSeq` to `endpointId` with `manager` (in the request's transaction).
   * @returns the queued row.
   */
  async queueRedelivery(manager: EntityManager, endpointId: number, eventSeq: number): Promise<WebhookRedelivery> {
    const row = { endpointId, eventSeq, requestedAt: new Date() };
    const result = await manager.getRepository(WebhookRedelivery).insert(row);
    return Object.assign(new WebhookRedelivery(), row, { id: toSafeInteger((result.identifiers[0] as { id: number | string }).id) });
  }

  /**
   * Up to `limit` redeliveries queued for `endpointId`, oldest first.
   * @throws DatabaseDeadlineError.
   */
  async redeliveries(endpointId: number, limit: number): Promise<WebhookRedelivery[]> {
    return withinDeadline(this.database, (manager) =>
      manager.getRepository(WebhookRedelivery).find({ where: { endpointId }, order: { id: 'ASC' }, take: limit }),
    );
  }

  /** Deletes the redelivery `id`, made, with `manager` (in the transaction that records its attempt). */
  async redelivered(manager: EntityManager, id: number): Promise<void> {
    await manager.getRepository(WebhookRedelivery).delete({ id });
  }

  /**
   * Stores a queued recovery with `manager` (in the request's transaction).
   * @returns the stored row.
   */
  async queueRecovery(
    manager: EntityManager,
    recovery: { endpointId: number; since: Date | null; afterSeq: number; upToSeq: number },
  ): Promise<WebhookRecovery> {
    const row = { ...recovery, state: 'queued' as const, cursor: recovery.afterSeq, requestedAt: new Date() };
    const result = await manager.getRepository(WebhookRecovery).insert(row);
    const id = toSafeInteger((result.identifiers[0] as { id: number | string }).id);
    return Object.assign(new WebhookRecovery(), { eventsTotal: 0, sent: 0, failed: 0, reason: null, startedAt: null, finishedAt: null }, row, { id });
  }

  /**
   * The recovery `id` of `endpointId`, or null.
   * @throws DatabaseDeadlineError.
   */
  async recovery(endpointId: number, id: number): Promise<WebhookRecovery | null> {
    return withinDeadline(this.database, (manager) => manager.getRepository(WebhookRecovery).findOneBy({ id, endpointId }));
  }

  /**
   * The recoveries of `endpointId` queued or running, oldest first.
   * @throws DatabaseDeadlineError.
   */
  async activeRecoveries(endpointId: number): Promise<WebhookRecovery[]> {
    return withinDeadline(this.database, (manager) =>
      manager
        .getRepository(WebhookRecovery)
        .createQueryBuilder('r')
        .where('r.endpointId = :endpointId', { endpointId })
        .andWhere("r.state IN ('queued', 'running')")
        .orderBy('r.id', 'ASC')
        .getMany(),
    );
  }

  /**
   * Marks the recovery `id` running, with `eventsTotal` events to resend in all; its start time is kept from a first start.
   * @throws DatabaseDeadlineError.
   */
  async startRecovery(id: number, eventsTotal: number): Promise<void> {
    await withinDeadline(this.database, (manager) =>
      manager
        .createQueryBuilder()
        .update(WebhookRecovery)
        .set({ state: 'running', eventsTotal, startedAt: () => 'COALESCE(started_at, :now)' })
        .setParameter('now', new Date())
        .where('id = :id', { id })
        .execute(),
    );
  }

  /** Moves the recovery `id` past event `eventSeq`, counting `step`, with `manager` (in the transaction that records the attempt). */
  async stepRecovery(manager: EntityManager, id: number, eventSeq: number, step: RecoveryStep | 'skipped'): Promise<void> {
    const counted = step === 'skipped' ? { eventsTotal: () => 'events_total - 1' } : { [step]: () => `${step} + 1` };
    await manager
      .createQueryBuilder()
      .update(WebhookRecovery)
      .set({ cursor: eventSeq, ...counted })
      .where('id = :id', { id })
      .execute();
  }

  /**
   * Ends the recovery `id`: `done`, or `failed` for `reason`.
   * @throws DatabaseDeadlineError.
   */
  async finishRecovery(id: number, outcome: { state: 'done' } | { state: 'failed'; reason: string }): Promise<void> {
    await withinDeadline(this.database, (manager) =>
      manager
        .getRepository(WebhookRecovery)
        .update({ id }, { state: outcome.state, reason: 'reason' in outcome ? outcome.reason : null, finishedAt: new Date() }),
    );
  }
}
