import type { EntityManager, SelectQueryBuilder } from 'typeorm';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { toSafeInteger } from '../database/int64';
import { WebhookAttempt } from './webhook-attempt.entity';
import { WebhookEndpoint } from './webhook-endpoint.entity';
import { WebhookRecovery } from './webhook-recovery.entity';
import { WebhookRedelivery } from './webhook-redelivery.entity';

/** An attempt to record: every column of WebhookAttempt but its id. */
export type AttemptRecord = Omit<WebhookAttempt, 'id'>;

/** Which events a recovery resends (docs/admin.md "Recovery"): after `after`, up to `upTo`, last attempt failed at or after `since`. */
export interface FailedEventsQuery {
  endpointId: number;
  after: number;
  upTo: number;
  since: Date | null;
}

/** What a purge deleted: attempts past the age, past the count per endpoint, of removed endpoints; finished recoveries past the age. */
export interface PurgeResult {
  byAge: number;
  byCount: number;
  orphaned: number;
  recoveries: number;
}

const INSERT_ATTEMPT =
  'INSERT INTO webhook_attempt (endpoint_id, event_seq, attempt, trigger_kind, started_at, duration_ms, status_code, error, response_body) ' +
  'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)';

/** An answer with a status outside 2xx, or no answer: SQL over the attempt's alias `a`. */
const FAILED = '(a.status_code IS NULL OR a.status_code < 200 OR a.status_code > 299)';
/** The attempt is its event's last to that endpoint: SQL over the attempt's alias `a`. */
const LAST_OF_ITS_EVENT = 'a.id = (SELECT MAX(b.id) FROM webhook_attempt b WHERE b.endpoint_id = a.endpoint_id AND b.event_seq = a.event_seq)';

/**
 * The `webhook_attempt` table (WebhookAttempt, docs/admin.md "Delivery attempts" and "Retention"): written by the
 * dispatcher inside the transaction that records an attempt's effect, read by the administration API and by recoveries,
 * purged by age and by count. Every call runs on the primary.
 */
export class WebhookAttemptRepository {
  constructor(private readonly database: Database) {}

  /**
   * Inserts `attempt` with `manager`: call it inside the transaction that records the attempt's effect. Plain SQL both
   * engines run as written, not TypeORM's insert(): it runs once per attempt, in the dispatcher's path (the time as the
   * `YYYY-MM-DD HH:MM:SS.SSS` UTC text both store in a DATETIME(3) column).
   */
  async insert(manager: EntityManager, attempt: AttemptRecord): Promise<void> {
    await manager.query(INSERT_ATTEMPT, [
      attempt.endpointId,
      attempt.eventSeq,
      attempt.attempt,
      attempt.trigger,
      attempt.startedAt.toISOString().replace('T', ' ').slice(0, 23),
      attempt.durationMs,
      attempt.statusCode,
      attempt.error,
      attempt.responseBody,
    ]);
  }

  /**
   * Up to `limit` attempts to `endpointId`, newest first, with ids below `before` when given, of event `eventSeq` when given.
   * @throws DatabaseDeadlineError (503).
   */
  async list(endpointId: number, page: { limit: number; before?: number; eventSeq?: number }): Promise<WebhookAttempt[]> {
    return withinDeadline(this.database, (manager) => {
      const select = manager
        .getRepository(WebhookAttempt)
        .createQueryBuilder('attempt')
        .where('attempt.endpointId = :endpointId', { endpointId })
        .orderBy('attempt.id', 'DESC')
        .limit(page.limit);
      if (page.before !== undefined) select.andWhere('attempt.id < :before', { before: page.before });
      if (page.eventSeq !== undefined) select.andWhere('attempt.eventSeq = :eventSeq', { eventSeq: page.eventSeq });
      return select.getMany();
    });
  }

  /**
   * The feed positions of the events a recovery resends (docs/admin.md "Recovery"), in feed order, up to `limit`.
   * @throws DatabaseDeadlineError.
   */
  async failedEvents(query: FailedEventsQuery, limit: number): Promise<number[]> {
    return withinDeadline(this.database, async (manager) => {
      const rows = await this.failedEventsSelect(manager, query)
        .select('a.event_seq', 'seq')
        .orderBy('a.event_seq', 'ASC')
        .limit(limit)
        .getRawMany<{ seq: string | number }>();
      return rows.map((row) => toSafeInteger(row.seq));
    });
  }

  /**
   * How many events {@link failedEvents} would give without a limit.
   * @throws DatabaseDeadlineError.
   */
  async countFailedEvents(query: FailedEventsQuery): Promise<number> {
    return withinDeadline(this.database, (manager) => this.failedEventsSelect(manager, query).getCount());
  }

  /**
   * The event of the last attempt the feed's own stream made to `endpointId`; undefined when there is none.
   * @throws DatabaseDeadlineError.
   */
  async lastDeliveryEvent(endpointId: number): Promise<number | undefined> {
    return withinDeadline(this.database, async (manager) => {
      const last = await manager
        .getRepository(WebhookAttempt)
        .createQueryBuilder('attempt')
        .where('attempt.endpointId = :endpointId', { endpointId })
        .andWhere("attempt.trigger = 'delivery'")
        .orderBy('attempt.id', 'DESC')
        .limit(1)
        .getOne();
      return last?.eventSeq;
    });
  }

  /**
   * Deletes the attempts started before `now - maxAgeMs`, those of endpoints that no longer exist, all but the newest
   * `maxPerEndpoint` of each endpoint, the recoveries finished before `now - maxAgeMs`, and the redeliveries and recoveries
   * of endpoints that no longer exist (docs/admin.md "Retention").
   * @throws DatabaseDeadlineError.
   */
  async purge({ now, maxAgeMs, maxPerEndpoint }: { now: Date; maxAgeMs: number; maxPerEndpoint: number }): Promise<PurgeResult> {
    const cutoff = new Date(now.getTime() - maxAgeMs);
    return withinDeadline(this.database, async (manager) => {
      const attempts = manager.getRepository(WebhookAttempt);
      const aged = await attempts.createQueryBuilder().delete().where('started_at < :cutoff', { cutoff }).execute();
      const endpointIds = manager.getRepository(WebhookEndpoint).createQueryBuilder('e').select('e.id').getQuery();
      const orphaned = await attempts.createQueryBuilder().delete().where(`endpoint_id NOT IN (${endpointIds})`).execute();
      let byCount = 0;
      const endpoints = await manager.getRepository(WebhookEndpoint).find({ select: { id: true } });
      for (const { id } of endpoints) {
        // The newest one past the bound: it and every older one go.
        const [oldest] = await attempts.find({ select: { id: true }, where: { endpointId: id }, order: { id: 'DESC' }, skip: maxPerEndpoint, take: 1 });
        if (!oldest) continue;
        const deleted = await attempts
          .createQueryBuilder()
          .delete()
          .where('endpoint_id = :id', { id })
          .andWhere('id <= :oldest', { oldest: oldest.id })
          .execute();
        byCount += deleted.affected ?? 0;
      }
      const recoveries = await manager
        .getRepository(WebhookRecovery)
        .createQueryBuilder()
        .delete()
        .where(`(state IN ('done', 'failed') AND finished_at < :cutoff) OR endpoint_id NOT IN (${endpointIds})`, { cutoff })
        .execute();
      await manager.getRepository(WebhookRedelivery).createQueryBuilder().delete().where(`endpoint_id NOT IN (${endpointIds})`).execute();
      return { byAge: aged.affected ?? 0, byCount, orphaned: orphaned.affected ?? 0, recoveries: recoveries.affected ?? 0 };
    });
  }

  private failedEventsSelect(manager: EntityManager, { endpointId, after, upTo, since }: FailedEventsQuery): SelectQueryBuilder<WebhookAttempt> {
    const select = manager
      .getRepository(WebhookAttempt)
      .createQueryBuilder('a')
      .where('a.endpoint_id = :endpointId', { endpointId })
      .andWhere('a.event_seq > :after', { after })
      .andWhere('a.event_seq <= :upTo', { upTo })
      .andWhere(LAST_OF_ITS_EVENT)
      .andWhere(FAILED);
    if (since !== null) select.andWhere('a.started_at >= :since', { since });
    return select;
  }
}
