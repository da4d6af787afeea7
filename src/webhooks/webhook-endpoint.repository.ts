import type { EntityManager } from 'typeorm';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { toSafeInteger } from '../database/int64';
import type { PetStatus } from '../pets/pet-status.enum';

/** One signing secret (`whsec_…`) of an endpoint; it stops signing at `expiresAt` (an ISO 8601 time), never when null. */
export interface WebhookSecret {
  secret: string;
  expiresAt: string | null;
}

/** Why an endpoint stopped receiving deliveries. */
export type DisabledReason = 'gone' | 'retries exhausted';

/** One webhook endpoint (docs/webhooks.md): where to deliver, what, and how far its deliveries have got. */
export interface WebhookEndpoint {
  id: number;
  url: string;
  /** Only pets with this status; every pet when null. */
  status: PetStatus | null;
  description: string | null;
  /** Newest first: every secret not expired signs each delivery. */
  secrets: WebhookSecret[];
  state: 'enabled' | 'disabled';
  disabledReason: string | null;
  /** The feed position delivered last (or skipped, not matching the filter): the next delivery is the first match after it. */
  cursor: number;
  createdAt: Date;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  failuresInRow: number;
  /** Attempts of the event in progress that failed (0: its first attempt is next). */
  attempt: number;
  /** Not before this time (a retry's delay); due now when null. */
  nextAttemptAt: Date | null;
}

interface EndpointRow {
  id: string | number;
  url: string;
  status_filter: string | null;
  description: string | null;
  secrets: string;
  state: string;
  disabled_reason: string | null;
  cursor_seq: string | number;
  created_at: Date | string;
  last_success_at: Date | string | null;
  last_failure_at: Date | string | null;
  failures_in_row: string | number;
  attempt: string | number;
  next_attempt_at: Date | string | null;
}

/** A DATETIME as read: a Date from mysql2 (UTC, the DataSource's timezone), a `YYYY-MM-DD HH:MM:SS.SSS` UTC string from sql.js. */
function toDate(value: Date | string | null): Date | null {
  if (value === null) return null;
  return value instanceof Date ? value : new Date(`${value.replace(' ', 'T')}Z`);
}

function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: toSafeInteger(row.id),
    url: row.url,
    status: row.status_filter as PetStatus | null,
    description: row.description,
    secrets: JSON.parse(row.secrets) as WebhookSecret[],
    state: row.state === 'enabled' ? 'enabled' : 'disabled',
    disabledReason: row.disabled_reason,
    cursor: toSafeInteger(row.cursor_seq),
    createdAt: toDate(row.created_at)!,
    lastSuccessAt: toDate(row.last_success_at),
    lastFailureAt: toDate(row.last_failure_at),
    failuresInRow: Number(row.failures_in_row),
    attempt: Number(row.attempt),
    nextAttemptAt: toDate(row.next_attempt_at),
  };
}

/** Runs one write and returns the rows it changed, on either driver. */
async function changedRows(manager: EntityManager, sql: string, parameters: unknown[]): Promise<number> {
  const runner = manager.queryRunner ?? manager.connection.createQueryRunner();
  try {
    const result = await runner.query(sql, parameters, true);
    return result.affected ?? 0;
  } finally {
    if (!manager.queryRunner) await runner.release();
  }
}

/**
 * The `webhook_endpoint` table: the endpoints, their delivery state and their leases. Every time is the database's clock
 * (UTC), so instances' clocks do not matter: a lease runs out at the same moment for all of them, as the feed
 * sequencer's does (docs/events.md "How it works"). Every call runs on the primary.
 */
export class WebhookEndpointRepository {
  private readonly now: string;
  private readonly lastInsertId: string;

  constructor(private readonly database: Database) {
    const mysql = database.writer.options.type === 'mysql';
    this.now = mysql ? 'UTC_TIMESTAMP(3)' : "strftime('%Y-%m-%d %H:%M:%f', 'now')";
    this.lastInsertId = mysql ? 'SELECT LAST_INSERT_ID() AS id' : 'SELECT last_insert_rowid() AS id';
  }

  /** SQL for the database's time `seconds` from now, and its parameter. */
  private later(seconds: number): { sql: string; parameter: string | number } {
    return this.database.writer.options.type === 'mysql'
      ? { sql: 'UTC_TIMESTAMP(3) + INTERVAL ? MICROSECOND', parameter: Math.round(seconds * 1e6) }
      : { sql: "strftime('%Y-%m-%d %H:%M:%f', 'now', ?)", parameter: `+${seconds.toFixed(3)} seconds` };
  }

  /**
   * Stores an enabled endpoint whose deliveries start after the feed's current head.
   * @returns its id.
   */
  async add(endpoint: { url: string; status: PetStatus | null; description: string | null; secret: string }): Promise<number> {
    return withinDeadline(
      this.database,
      async (manager) => {
        await manager.query(
          `INSERT INTO webhook_endpoint (url, status_filter, description, secrets, state, cursor_seq, created_at)
            SELECT ?, ?, ?, ?, 'enabled', head, ${this.now} FROM pet_feed WHERE name = 'pets'`,
          [endpoint.url, endpoint.status, endpoint.description, JSON.stringify([{ secret: endpoint.secret, expiresAt: null }])],
        );
        const [row]: { id: string | number }[] = await manager.query(this.lastInsertId);
        return toSafeInteger(row.id);
      },
      { transaction: true },
    );
  }

  /** Every endpoint, by id. */
  async list(): Promise<WebhookEndpoint[]> {
    const rows: EndpointRow[] = await withinDeadline(this.database, (manager) => manager.query('SELECT * FROM webhook_endpoint ORDER BY id'));
    return rows.map(toEndpoint);
  }

  /** The endpoint `id`, or null. */
  async get(id: number): Promise<WebhookEndpoint | null> {
    const rows: EndpointRow[] = await withinDeadline(this.database, (manager) => manager.query('SELECT * FROM webhook_endpoint WHERE id = ?', [id]));
    return rows.length > 0 ? toEndpoint(rows[0]) : null;
  }

  /** Deletes the endpoint; false when there is none with this id. */
  async remove(id: number): Promise<boolean> {
    return withinDeadline(this.database, async (manager) => (await changedRows(manager, 'DELETE FROM webhook_endpoint WHERE id = ?', [id])) === 1);
  }

  /** Replaces the secrets; false when there is no endpoint with this id. */
  async setSecrets(id: number, secrets: readonly WebhookSecret[]): Promise<boolean> {
    return withinDeadline(
      this.database,
      async (manager) => (await changedRows(manager, 'UPDATE webhook_endpoint SET secrets = ? WHERE id = ?', [JSON.stringify(secrets), id])) === 1,
    );
  }

  /** Enables the endpoint again, its next delivery due now (from its cursor: the event that failed comes first); false when there is none. */
  async enable(id: number): Promise<boolean> {
    return withinDeadline(
      this.database,
      async (manager) =>
        (await changedRows(
          manager,
          "UPDATE webhook_endpoint SET state = 'enabled', disabled_reason = NULL, attempt = 0, failures_in_row = 0, next_attempt_at = NULL WHERE id = ?",
          [id],
        )) === 1,
    );
  }

  /**
   * Renews `holder`'s leases on the endpoints in `running`, then takes up to `limit` more: enabled, due, behind the
   * feed's head, and leased by nobody (or by an instance whose lease ran out). Writes nothing when there is nothing to
   * renew or take (the embedded database saves its file after every write).
   * @returns the endpoints `holder` holds now and that are not in `running`.
   */
  async claim(holder: string, leaseSeconds: number, limit: number, running: ReadonlySet<number>): Promise<WebhookEndpoint[]> {
    const expiry = this.later(leaseSeconds);
    return withinDeadline(this.database, async (manager) => {
      if (running.size > 0) {
        await manager.query(`UPDATE webhook_endpoint SET lease_expires_at = ${expiry.sql} WHERE lease_holder = ?`, [expiry.parameter, holder]);
      }
      if (limit <= 0) return [];
      const busy = [...running];
      // Its own lease on an endpoint it no longer delivers to (a release lost to a database error) counts as free.
      const due: { id: string | number }[] = await manager.query(
        `SELECT e.id FROM webhook_endpoint e
          WHERE e.state = 'enabled' AND (e.next_attempt_at IS NULL OR e.next_attempt_at <= ${this.now})
            AND (e.lease_holder IS NULL OR e.lease_expires_at < ${this.now} OR e.lease_holder = ?)
            AND e.cursor_seq < (SELECT head FROM pet_feed WHERE name = 'pets')
            ${busy.length > 0 ? `AND e.id NOT IN (${busy.map(() => '?').join(', ')})` : ''}
          ORDER BY e.next_attempt_at, e.id LIMIT ?`,
        [holder, ...busy, limit],
      );
      if (due.length === 0) return [];
      const ids = due.map((row) => toSafeInteger(row.id));
      // Taken only if still free: another instance may have taken one since the SELECT.
      await manager.query(
        `UPDATE webhook_endpoint SET lease_holder = ?, lease_expires_at = ${expiry.sql}
          WHERE id IN (${ids.map(() => '?').join(', ')}) AND state = 'enabled' AND (lease_holder IS NULL OR lease_expires_at < ${this.now} OR lease_holder = ?)`,
        [holder, expiry.parameter, ...ids, holder],
      );
      const rows: EndpointRow[] = await manager.query(
        `SELECT * FROM webhook_endpoint WHERE id IN (${ids.map(() => '?').join(', ')}) AND lease_holder = ? AND lease_expires_at > ${this.now} ORDER BY id`,
        [...ids, holder],
      );
      return rows.map(toEndpoint).filter((endpoint) => !running.has(endpoint.id));
    });
  }

  /** Each endpoint's (enabled or not) distance behind the feed's head, in positions. */
  async lag(): Promise<{ id: number; lag: number }[]> {
    const rows: { id: string | number; lag: string | number }[] = await withinDeadline(this.database, (manager) =>
      manager.query("SELECT e.id, f.head - e.cursor_seq AS lag FROM webhook_endpoint e, pet_feed f WHERE f.name = 'pets' ORDER BY e.id"),
    );
    return rows.map((row) => ({ id: toSafeInteger(row.id), lag: Math.max(0, Number(row.lag)) }));
  }

  /** The feed's head, to compare each endpoint's cursor with. */
  async head(): Promise<number> {
    return withinDeadline(this.database, async (manager) => {
      const [row]: { head: string | number }[] = await manager.query("SELECT head FROM pet_feed WHERE name = 'pets'");
      return toSafeInteger(row.head);
    });
  }

  /**
   * Moves the cursor to `seq` after a delivery (or over events the filter skips, `delivered` false), if `holder` still
   * holds the lease.
   * @returns false when the lease was lost: another instance delivers now, and this one must stop.
   */
  async advance(id: number, holder: string, seq: number, delivered: boolean): Promise<boolean> {
    const success = delivered ? `, last_success_at = ${this.now}, failures_in_row = 0, attempt = 0, next_attempt_at = NULL` : '';
    return withinDeadline(
      this.database,
      async (manager) =>
        (await changedRows(
          manager,
          `UPDATE webhook_endpoint SET cursor_seq = ?${success} WHERE id = ? AND lease_holder = ? AND lease_expires_at > ${this.now} AND cursor_seq < ?`,
          [seq, id, holder, seq],
        )) === 1,
    );
  }

  /**
   * Records a failed attempt and gives the lease up: the next attempt is due in `retryInSeconds`, or, with `disable`,
   * none: the endpoint is disabled for that reason.
   * @returns false when the lease had been lost (nothing recorded).
   */
  async recordFailure(id: number, holder: string, outcome: { retryInSeconds: number } | { disable: DisabledReason }): Promise<boolean> {
    const next = 'disable' in outcome ? null : this.later(outcome.retryInSeconds);
    const set =
      next === null ? "state = 'disabled', disabled_reason = ?, next_attempt_at = NULL, attempt = 0" : `next_attempt_at = ${next.sql}, attempt = attempt + 1`;
    const parameters = next === null ? [(outcome as { disable: DisabledReason }).disable] : [next.parameter];
    return withinDeadline(
      this.database,
      async (manager) =>
        (await changedRows(
          manager,
          `UPDATE webhook_endpoint SET ${set}, last_failure_at = ${this.now}, failures_in_row = failures_in_row + 1, lease_holder = NULL
            WHERE id = ? AND lease_holder = ? AND lease_expires_at > ${this.now}`,
          [...parameters, id, holder],
        )) === 1,
    );
  }

  /** Gives up `holder`'s lease on `id`, or on every endpoint when `id` is undefined (at shutdown). */
  async release(holder: string, id?: number): Promise<void> {
    await withinDeadline(this.database, (manager) =>
      id === undefined
        ? manager.query('UPDATE webhook_endpoint SET lease_holder = NULL WHERE lease_holder = ?', [holder])
        : manager.query('UPDATE webhook_endpoint SET lease_holder = NULL WHERE id = ? AND lease_holder = ?', [id, holder]),
    );
  }
}
