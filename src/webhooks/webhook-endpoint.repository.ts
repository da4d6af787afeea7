import type { EntityManager, ObjectLiteral, QueryDeepPartialEntity } from 'typeorm';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { toSafeInteger } from '../database/int64';
import { PET_FEED_NAME, PetFeedRecord } from '../events/pet-feed.entity';
import { selectFeedHead } from '../events/pet-feed.repository';
import type { PetStatus } from '../pets/pet-status.enum';
import { type DisabledReason, OPERATOR_DISABLED, WebhookEndpoint, type WebhookSecret } from './webhook-endpoint.entity';

/** What an operator may change on an endpoint (docs/admin.md "Webhook endpoints"): undefined leaves a field as it is. */
export interface WebhookEndpointChange {
  url?: string;
  /** null: every pet. */
  status?: PetStatus | null;
  description?: string | null;
  enabled?: boolean;
}

/**
 * Work to do in the transaction of a change to endpoint `id` (the audit trail's record), with its `manager`: when it
 * throws, the change rolls back.
 */
export type WithinChange = (manager: EntityManager, id: number) => Promise<void>;

const NOTHING: WithinChange = async () => undefined;

/** Enabled again: due now, from the cursor. */
const ENABLED = { state: 'enabled' as const, disabledReason: null, attempt: 0, failuresInRow: 0, nextAttemptAt: null };

/**
 * The `webhook_endpoint` table (WebhookEndpoint): the endpoints, their delivery state and their leases. Every time is the
 * database's clock (UTC, Database.dialect), so instances' clocks do not matter: a lease runs out at the same moment for
 * all of them, as the feed sequencer's does (docs/events.md "How it works"). Every call runs on the primary.
 */
export class WebhookEndpointRepository {
  /** The feed's head (binds its name), built once: read per page of deliveries. */
  private readonly headSql: string;
  /** The claim's SELECT of due endpoints by how many busy ones it leaves out: built once per count, run at every advance of the feed. */
  private readonly dueSql = new Map<number, string>();

  constructor(private readonly database: Database) {
    this.headSql = selectFeedHead(database.writer);
  }

  /**
   * Stores an enabled endpoint whose deliveries start after the feed's current head (read by the INSERT itself), and
   * runs `within` in the same transaction (the audit trail's record: no endpoint stored unrecorded).
   * @returns the endpoint as stored, and the feed's head, read in that transaction.
   * @throws DatabaseDeadlineError; CommitOutcomeUnknownError; what `within` throws (nothing is stored then).
   */
  async add(
    endpoint: { url: string; status: PetStatus | null; description: string | null; secret: string },
    within: WithinChange = NOTHING,
  ): Promise<{ endpoint: WebhookEndpoint; head: number }> {
    const { now } = this.database.dialect;
    return withinDeadline(
      this.database,
      async (manager) => {
        const head = manager.createQueryBuilder().subQuery().select('feed.head').from(PetFeedRecord, 'feed').where(`feed.name = '${PET_FEED_NAME}'`).getQuery();
        const result = await manager
          .createQueryBuilder()
          .insert()
          .into(WebhookEndpoint)
          .values({
            url: endpoint.url,
            status: endpoint.status,
            description: endpoint.description,
            secrets: [{ secret: endpoint.secret, expiresAt: null }],
            state: 'enabled',
            cursor: () => head,
            createdAt: () => now,
          })
          .execute();
        const id = toSafeInteger((result.identifiers[0] as { id: number | string }).id);
        await within(manager, id);
        return (await this.findWith(manager, id))!;
      },
      { transaction: true },
    );
  }

  /**
   * Every endpoint, by id.
   * @throws DatabaseDeadlineError.
   */
  async list(): Promise<WebhookEndpoint[]> {
    return withinDeadline(this.database, (manager) => manager.getRepository(WebhookEndpoint).find({ order: { id: 'ASC' } }));
  }

  /**
   * Up to `limit` endpoints with an id above `afterId` (all when undefined), by id, and the feed's head read with them
   * (each endpoint's lag is the head minus its cursor).
   * @throws DatabaseDeadlineError.
   */
  async page(afterId: number | undefined, limit: number): Promise<{ endpoints: WebhookEndpoint[]; head: number }> {
    return withinDeadline(this.database, async (manager) => {
      const select = manager.getRepository(WebhookEndpoint).createQueryBuilder('e').orderBy('e.id', 'ASC').limit(limit);
      if (afterId !== undefined) select.where('e.id > :afterId', { afterId });
      const endpoints = await select.getMany();
      return { endpoints, head: await this.headWith(manager) };
    });
  }

  /**
   * The endpoint `id`, or null.
   * @throws DatabaseDeadlineError.
   */
  async get(id: number): Promise<WebhookEndpoint | null> {
    return withinDeadline(this.database, (manager) => manager.getRepository(WebhookEndpoint).findOneBy({ id }));
  }

  /**
   * The endpoint `id` and the feed's head read with it; null when there is no such endpoint.
   * @throws DatabaseDeadlineError.
   */
  async find(id: number): Promise<{ endpoint: WebhookEndpoint; head: number } | null> {
    return withinDeadline(this.database, (manager) => this.findWith(manager, id));
  }

  /**
   * Deletes the endpoint and runs `within` in the same transaction; false when there is none with this id (`within` not run).
   * @throws DatabaseDeadlineError; what `within` throws (nothing is deleted then).
   */
  async remove(id: number, within: WithinChange = NOTHING): Promise<boolean> {
    return withinDeadline(
      this.database,
      async (manager) => {
        if ((await manager.getRepository(WebhookEndpoint).delete({ id })).affected !== 1) return false;
        await within(manager, id);
        return true;
      },
      { transaction: true },
    );
  }

  /**
   * Applies an operator's `change` to endpoint `id` and runs `within`, in one transaction. A new `url` makes a retry that
   * waits due at once (the cursor stays); `enabled` true re-enables a disabled endpoint, its next delivery due now from its
   * cursor (as `webhook enable` does), and false disables an enabled one with the reason {@link OPERATOR_DISABLED}; either
   * leaves an endpoint already in that state as it is.
   * @returns the endpoint as it is then, with the feed's head; null when there is none with this id (`within` not run).
   * @throws DatabaseDeadlineError; what `within` throws (nothing is changed then).
   */
  async update(id: number, change: WebhookEndpointChange, within: WithinChange = NOTHING): Promise<{ endpoint: WebhookEndpoint; head: number } | null> {
    return withinDeadline(
      this.database,
      async (manager) => {
        const endpoints = manager.getRepository(WebhookEndpoint);
        const current = await endpoints.findOneBy({ id });
        if (!current) return null;
        const { url, status, description, enabled } = change;
        const set: QueryDeepPartialEntity<WebhookEndpoint> = {
          ...(url !== undefined && { url, attempt: 0, nextAttemptAt: null }),
          ...(status !== undefined && { status }),
          ...(description !== undefined && { description }),
          ...(enabled === true && current.state === 'disabled' && ENABLED),
          ...(enabled === false &&
            current.state === 'enabled' && { state: 'disabled' as const, disabledReason: OPERATOR_DISABLED, attempt: 0, nextAttemptAt: null }),
        };
        if (Object.keys(set).length > 0) await endpoints.update({ id }, set);
        await within(manager, id);
        return this.findWith(manager, id);
      },
      { transaction: true },
    );
  }

  /**
   * Replaces the secrets of endpoint `id` by `rotate(its secrets)` and runs `within`, in one transaction.
   * @returns false when there is no endpoint with this id (`within` not run).
   * @throws DatabaseDeadlineError; what `rotate` or `within` throws (nothing is changed then).
   */
  async rotateSecrets(id: number, rotate: (secrets: readonly WebhookSecret[]) => WebhookSecret[], within: WithinChange = NOTHING): Promise<boolean> {
    return withinDeadline(
      this.database,
      async (manager) => {
        const endpoints = manager.getRepository(WebhookEndpoint);
        const current = await endpoints.findOneBy({ id });
        if (!current) return false;
        await endpoints.update({ id }, { secrets: rotate(current.secrets) });
        await within(manager, id);
        return true;
      },
      { transaction: true },
    );
  }

  /**
   * Replaces the secrets; false when there is no endpoint with this id.
   * @throws DatabaseDeadlineError.
   */
  async setSecrets(id: number, secrets: readonly WebhookSecret[]): Promise<boolean> {
    return withinDeadline(
      this.database,
      async (manager) => (await manager.getRepository(WebhookEndpoint).update({ id }, { secrets: [...secrets] })).affected === 1,
    );
  }

  /**
   * Renews `holder`'s leases on the endpoints in `running`, then takes up to `limit` more: enabled, due, behind the
   * feed's head, and leased by nobody (or by an instance whose lease ran out). Writes nothing when there is nothing to
   * renew or take (the embedded database saves its file after every write).
   * An endpoint with a redelivery queued or a recovery queued or running (docs/admin.md "Redelivery", "Recovery") is due
   * whatever its retry's time and cursor.
   * @returns the endpoints `holder` holds now and that are not in `running`, each with what it is due for.
   * @throws DatabaseDeadlineError.
   */
  async claim(holder: string, leaseSeconds: number, limit: number, running: ReadonlySet<number>): Promise<ClaimedEndpoint[]> {
    const { now, later } = this.database.dialect;
    const expiry = later(leaseSeconds);
    return withinDeadline(this.database, async (manager) => {
      const endpoints = manager.getRepository(WebhookEndpoint);
      if (running.size > 0) await endpoints.update({ leaseHolder: holder }, { leaseExpiresAt: () => expiry });
      if (limit <= 0) return [];
      const busy = [...running];
      const due: { id: string | number; due: string | number; resend: string | number }[] = await manager.query(this.selectDue(busy.length), [
        PET_FEED_NAME,
        holder,
        ...busy,
        limit,
      ]);
      if (due.length === 0) return [];
      const ids = due.map((row) => toSafeInteger(row.id));
      const work = new Map(due.map((row) => [toSafeInteger(row.id), { due: Number(row.due) === 1, resend: Number(row.resend) === 1 }]));
      // Taken only if still free: another instance may have taken one since the SELECT.
      await endpoints
        .createQueryBuilder()
        .update()
        .set({ leaseHolder: holder, leaseExpiresAt: () => expiry })
        .where('id IN (:...ids)', { ids })
        .andWhere("state = 'enabled'")
        .andWhere(`(lease_holder IS NULL OR lease_expires_at < ${now} OR lease_holder = :holder)`, { holder })
        .execute();
      const held = await endpoints
        .createQueryBuilder('e')
        .where('e.id IN (:...ids)', { ids })
        .andWhere('e.leaseHolder = :holder', { holder })
        .andWhere(`e.leaseExpiresAt > ${now}`)
        .orderBy('e.id', 'ASC')
        .getMany();
      return held.filter((endpoint) => !running.has(endpoint.id)).map((endpoint) => ({ endpoint, ...work.get(endpoint.id)! }));
    });
  }

  /**
   * Each endpoint's (enabled or not) distance behind the feed's head, in positions.
   * @throws DatabaseDeadlineError.
   */
  async lag(): Promise<{ id: number; lag: number }[]> {
    const rows = await withinDeadline(this.database, (manager) =>
      manager
        .getRepository(WebhookEndpoint)
        .createQueryBuilder('e')
        .select('e.id', 'id')
        .addSelect('feed.head - e.cursor', 'lag')
        .innerJoin(PetFeedRecord, 'feed', 'feed.name = :feed', { feed: PET_FEED_NAME })
        .orderBy('e.id', 'ASC')
        .getRawMany<{ id: string | number; lag: string | number }>(),
    );
    return rows.map((row) => ({ id: toSafeInteger(row.id), lag: Math.max(0, Number(row.lag)) }));
  }

  /**
   * The feed's head, to compare each endpoint's cursor with.
   * @throws DatabaseDeadlineError.
   */
  async head(): Promise<number> {
    return withinDeadline(this.database, (manager) => this.headWith(manager));
  }

  /** The feed's head, read with `manager`. */
  private async headWith(manager: EntityManager): Promise<number> {
    const [row]: { head: string | number }[] = await manager.query(this.headSql, [PET_FEED_NAME]);
    return toSafeInteger(row.head);
  }

  /** Endpoint `id` and the feed's head, read with `manager`; null when there is no such endpoint. */
  private async findWith(manager: EntityManager, id: number): Promise<{ endpoint: WebhookEndpoint; head: number } | null> {
    const endpoint = await manager.getRepository(WebhookEndpoint).findOneBy({ id });
    return endpoint && { endpoint, head: await this.headWith(manager) };
  }

  /**
   * Moves the cursor to `seq` after a delivery (or over events the filter skips, `delivered` false), if `holder` still
   * holds the lease.
   * @param also - more writes made with it (the attempt's record, docs/admin.md "Delivery attempts"; see
   *   {@link alongside}), done whether or not the lease is still held.
   * @returns false when the lease was lost: another instance delivers now, and this one must stop.
   * @throws DatabaseDeadlineError.
   */
  async advance(id: number, holder: string, seq: number, delivered: boolean, also?: (manager: EntityManager) => Promise<void>): Promise<boolean> {
    const { now } = this.database.dialect;
    const success = delivered ? { lastSuccessAt: () => now, failuresInRow: 0, attempt: 0, nextAttemptAt: null } : {};
    return this.alongside(
      (manager) => leased(manager, id, holder, now, { cursor: seq, ...success }, { condition: 'cursor_seq < :seq', parameters: { seq } }),
      also,
    );
  }

  /**
   * Records a failed attempt and gives the lease up: the next attempt is due in `retryInSeconds`, or, with `disable`,
   * none: the endpoint is disabled for that reason. `also` adds writes made with it, as in {@link advance}.
   * @returns false when the lease had been lost (nothing recorded but `also`).
   * @throws DatabaseDeadlineError; RangeError for a retry delay that is not a finite number.
   */
  async recordFailure(
    id: number,
    holder: string,
    outcome: { retryInSeconds: number } | { disable: DisabledReason },
    also?: (manager: EntityManager) => Promise<void>,
  ): Promise<boolean> {
    const { now, later } = this.database.dialect;
    const next =
      'disable' in outcome
        ? { state: 'disabled' as const, disabledReason: outcome.disable, nextAttemptAt: null, attempt: 0 }
        : { nextAttemptAt: () => later(outcome.retryInSeconds), attempt: () => 'attempt + 1' };
    const failed = { lastFailureAt: () => now, failuresInRow: () => 'failures_in_row + 1', leaseHolder: null };
    return this.alongside((manager) => leased(manager, id, holder, now, { ...next, ...failed }), also);
  }

  /**
   * Runs `work` (the writes recording a resend: its attempt, and its redelivery's removal or its recovery's step) in one
   * transaction with a check that `holder` still holds the lease on `id`, which keeps the endpoint's row locked until it
   * commits, so that no instance claims it in between (docs/admin.md "Redelivery").
   * @returns false when the lease was lost, and nothing was written: another instance resends now, and this one must stop.
   * @throws DatabaseDeadlineError.
   */
  async whileLeased(id: number, holder: string, work: (manager: EntityManager) => Promise<void>): Promise<boolean> {
    const { now } = this.database.dialect;
    return withinDeadline(
      this.database,
      async (manager) => {
        if (!(await leased(manager, id, holder, now, { leaseHolder: holder }))) return false;
        await work(manager);
        return true;
      },
      { transaction: true },
    );
  }

  /**
   * Runs `update` of an endpoint's row and the writes `also` (an attempt's record) together: in one transaction on the
   * embedded database, whose file is saved once per transaction rather than once per write; side by side on a server,
   * where a transaction's START and COMMIT would cost two more round trips per delivered event (measured on MariaDB:
   * about 300 µs of CPU per delivered event in a transaction, 125 µs side by side; docs/admin.md "Delivery attempts").
   * @returns what `update` returns.
   * @throws DatabaseDeadlineError, from either.
   */
  private async alongside(update: (manager: EntityManager) => Promise<boolean>, also?: (manager: EntityManager) => Promise<void>): Promise<boolean> {
    if (also === undefined) return withinDeadline(this.database, update);
    if (this.database.embedded) {
      return withinDeadline(
        this.database,
        async (manager) => {
          await also(manager);
          return update(manager);
        },
        { transaction: true },
      );
    }
    const [, updated] = await Promise.all([withinDeadline(this.database, also), withinDeadline(this.database, update)]);
    return updated;
  }

  /**
   * The SELECT of the endpoints due for a claim, `busy` of them left out: enabled, due, behind the feed's head, and leased
   * by nobody, by an instance whose lease ran out, or by the claimer itself (its own lease on an endpoint it no longer
   * delivers to, a release lost to a database error, counts as free). `due`: its retry's time has come and it is behind
   * the head; `resend`: a redelivery or a recovery awaits it; either makes it a candidate. Built by TypeORM once per count
   * of busy endpoints. Binds (the feed's name, holder, …busy ids, limit).
   */
  private selectDue(busy: number): string {
    let sql = this.dueSql.get(busy);
    if (sql === undefined) {
      const { now } = this.database.dialect;
      const due = `((e.nextAttemptAt IS NULL OR e.nextAttemptAt <= ${now}) AND e.cursor < feed.head)`;
      const resend =
        '(EXISTS (SELECT 1 FROM webhook_redelivery r WHERE r.endpoint_id = e.id) ' +
        "OR EXISTS (SELECT 1 FROM webhook_recovery c WHERE c.endpoint_id = e.id AND c.state IN ('queued', 'running')))";
      const query = this.database.writer
        .createQueryBuilder(WebhookEndpoint, 'e')
        .select('e.id', 'id')
        .addSelect(`CASE WHEN ${due} THEN 1 ELSE 0 END`, 'due')
        .addSelect(`CASE WHEN ${resend} THEN 1 ELSE 0 END`, 'resend')
        .innerJoin(PetFeedRecord, 'feed', 'feed.name = ?')
        .where("e.state = 'enabled'")
        .andWhere(`(e.leaseHolder IS NULL OR e.leaseExpiresAt < ${now} OR e.leaseHolder = ?)`)
        .andWhere(`(${due} OR ${resend})`);
      if (busy > 0) query.andWhere(`e.id NOT IN (${Array.from({ length: busy }, () => '?').join(', ')})`);
      sql = `${query.orderBy('e.nextAttemptAt', 'ASC').addOrderBy('e.id', 'ASC').getQuery()} LIMIT ?`;
      this.dueSql.set(busy, sql);
    }
    return sql;
  }

  /**
   * Gives up `holder`'s lease on `id`, or on every endpoint when `id` is undefined (at shutdown).
   * @throws DatabaseDeadlineError.
   */
  async release(holder: string, id?: number): Promise<void> {
    await withinDeadline(this.database, (manager) =>
      manager.getRepository(WebhookEndpoint).update(id === undefined ? { leaseHolder: holder } : { id, leaseHolder: holder }, { leaseHolder: null }),
    );
  }
}

/** An endpoint a claim took, and what for: its feed's next events (`due`), queued resends (`resend`), or both. */
export interface ClaimedEndpoint {
  endpoint: WebhookEndpoint;
  due: boolean;
  resend: boolean;
}

/**
 * Updates endpoint `id` with `changes` (values, or SQL expressions of its columns and the database's clock) if `holder`'s
 * lease on it has not run out on the database's clock `now`, and if `also` (SQL, with its parameters) holds.
 * @returns whether it did.
 */
async function leased(
  manager: EntityManager,
  id: number,
  holder: string,
  now: string,
  changes: QueryDeepPartialEntity<WebhookEndpoint>,
  also?: { condition: string; parameters: ObjectLiteral },
): Promise<boolean> {
  const update = manager
    .createQueryBuilder()
    .update(WebhookEndpoint)
    .set(changes)
    .where('id = :id', { id })
    .andWhere('lease_holder = :holder', { holder })
    .andWhere(`lease_expires_at > ${now}`);
  if (also) update.andWhere(also.condition, also.parameters);
  return (await update.execute()).affected === 1;
}
