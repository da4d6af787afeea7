import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { CommitOutcomeUnknownError, DatabaseDeadlineError, isConflict, isConnectionLost } from './database-errors';
import { DATABASE_DEADLINES } from '../limits';

/** What `/readyz` and the metrics say of one database server (docs/operations.md "Scale-out notes"). */
export interface NodeState {
  /** `primary`, or `replica1`, `replica2`… in the order of DATABASE_REPLICA_URLS. */
  readonly name: string;
  readonly role: 'primary' | 'replica';
  /** A replica: in the read rotation. */
  readonly ready: boolean;
  /** `ok`, `unreachable`, a Galera state (`Joined`, `non-Primary`, `not caught up`…), `lagging`, `replication stopped`, `not checked yet`. */
  readonly state: string;
  /** Seconds; null when the replica cannot tell. */
  readonly lagSeconds?: number | null;
}

/** Destroying a pooled mysql2 connection closes its socket and keeps it out of the pool. */
interface DestroyableConnection {
  destroy(): void;
}

/** A connection pool's usage, for the metrics (docs/operations.md "Metrics"). */
export type PoolUsage = Readonly<Record<'total' | 'idle' | 'waiting' | 'limit', number>>;

/** One database server, the primary or a read replica, with its latest checked state (database-health.ts). */
export class DatabaseNode {
  /** Its sessions then read causally (wsrep_sync_wait). */
  galera = false;
  state: NodeState;
  /** A replica unreachable at start, being connected in the background. */
  connecting?: Promise<void>;
  /** Pooled connections already set to read causally (Galera). */
  private readonly causalSessions = new WeakSet<DestroyableConnection>();

  constructor(
    readonly name: string,
    readonly role: 'primary' | 'replica',
    readonly dataSource: DataSource,
  ) {
    this.state = { name, role, ready: role === 'primary', state: 'not checked yet' };
  }

  /**
   * Runs one call on this node under one deadline of `timeoutMs`, covering pool wait, queue and every statement
   * (docs/failures.md "The database"): mysql2's query timeout starts only when a statement becomes active, so the
   * connection is destroyed at the deadline; sql.js runs it as it is. A lost conflict is rerun, so `work` may run more than once.
   * `requestId` is noted on the query runner, for the slow-statement log (typeorm-pino.logger.ts).
   * @throws DatabaseDeadlineError; CommitOutcomeUnknownError; what `work` throws.
   */
  async call<T>(
    work: (manager: EntityManager) => Promise<T>,
    timeoutMs: number,
    {
      transaction = false,
      autocommitWrite = false,
      requestId,
    }: { transaction?: boolean | 'READ COMMITTED'; autocommitWrite?: boolean; requestId?: string } = {},
  ): Promise<T> {
    // sql.js needs no deadline: synchronous from BEGIN to COMMIT, it can neither stall nor interleave.
    if (this.dataSource.options.type !== 'mysql') return transaction ? this.dataSource.transaction(work) : work(this.dataSource.manager);
    const runner = this.dataSource.createQueryRunner('master');
    if (requestId !== undefined) runner.data.requestId = requestId;
    let connection: DestroyableConnection | undefined;
    let committing = false;
    let written: T | undefined;
    let expired = false;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        expired = true;
        connection?.destroy();
        reject(new DatabaseDeadlineError(timeoutMs));
      }, timeoutMs);
    });
    const call = (async () => {
      connection = (await runner.connect()) as DestroyableConnection;
      if (expired) {
        await runner.release();
        throw new DatabaseDeadlineError(timeoutMs);
      }
      await this.readCausally(runner, connection);
      if (!transaction && !autocommitWrite) return work(runner.manager);
      for (let attempt = 1; ; attempt++) {
        try {
          if (autocommitWrite) {
            // From here the statement may reach the server: its outcome is unknown until the server answers.
            committing = true;
            return await work(runner.manager);
          }
          await runner.startTransaction(transaction === true ? undefined : transaction || undefined);
          const result = await work(runner.manager);
          written = result;
          committing = true;
          await runner.commitTransaction();
          return result;
        } catch (error) {
          if (expired || !isConflict(error) || attempt >= DATABASE_DEADLINES.conflictAttempts) throw error;
          // A lost conflict committed nothing: a deadline from here on is a 503.
          committing = false;
          // A lock wait timeout rolls back only its statement: end the transaction before running it again.
          if (!autocommitWrite) await runner.rollbackTransaction();
          await sleep(Math.random() * DATABASE_DEADLINES.conflictBackoffMs * attempt);
        }
      }
    })();
    try {
      return await Promise.race([call, deadline]);
    } catch (error) {
      if (committing && (expired || isConnectionLost(error))) {
        throw new CommitOutcomeUnknownError('The database did not confirm the commit.', { cause: error }, written);
      }
      if (runner.isTransactionActive && !expired && !isConnectionLost(error)) {
        await Promise.race([runner.rollbackTransaction(), deadline]).catch(() => undefined);
      }
      throw error;
    } finally {
      clearTimeout(timer);
      // A stalled statement may still fail later on its destroyed connection: not an unhandled rejection.
      if (expired) call.catch(() => undefined);
      await runner.release();
    }
  }

  /**
   * Its mysql2 pool's usage; undefined without one (sql.js). mysql2 has no public counters (its typings give the Pool
   * `config` only, and its events miss connections closed when idle), so the pool's private queues are read here, and only here.
   */
  poolUsage(): PoolUsage | undefined {
    type Queue = { length: number };
    type Pool = { _allConnections?: Queue; _freeConnections?: Queue; _connectionQueue?: Queue; config?: { connectionLimit?: number } };
    const { pool } = this.dataSource.driver as unknown as { pool?: Pool };
    if (!pool) return undefined;
    return {
      total: pool._allConnections?.length ?? 0,
      idle: pool._freeConnections?.length ?? 0,
      waiting: pool._connectionQueue?.length ?? 0,
      limit: pool.config?.connectionLimit ?? 0,
    };
  }

  /** On Galera, so a pet created through any node is found through every other. */
  private async readCausally(runner: QueryRunner, connection: DestroyableConnection): Promise<void> {
    if (!this.galera || this.causalSessions.has(connection)) return;
    await runner.query('SET SESSION wsrep_sync_wait = 1');
    this.causalSessions.add(connection);
  }
}
