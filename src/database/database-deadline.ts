import type { DataSource, EntityManager } from 'typeorm';
import { DEADLINE_EXCEEDED, isDatabaseUnavailable } from './database-errors';

/** How long database work may take (README "Security"), defined once. */
export const DATABASE_DEADLINES = Object.freeze({
  /** A new connection must be open within this time (ms); the driver's own connect timeout. */
  connectMs: 1000,
  /** One database call of a request: waiting for a pooled connection, its queue and every statement (ms). */
  callMs: 2000,
  /** `/readyz`'s check of the database (ms): a probe must get its answer quickly. */
  readinessMs: 500,
  /** A statement slower than this (ms) is logged at `warn`. */
  slowQueryMs: 500,
});

/**
 * The database did not finish a call within its deadline, and its connection was destroyed.
 * A transaction of the call never sent COMMIT, so the server rolls it back: nothing of it is
 * stored. (A single statement outside a transaction may have run; pets are only ever written
 * in transactions.) Answered 503 SERVICE_UNAVAILABLE: safe to retry.
 */
export class DatabaseDeadlineError extends Error {
  override readonly name = 'DatabaseDeadlineError';
  readonly code = DEADLINE_EXCEEDED;

  constructor(timeoutMs: number) {
    super(`The database did not answer within ${timeoutMs} ms.`);
  }
}

/**
 * COMMIT was sent and its answer never came (deadline passed, or the connection broke): the
 * server may or may not have committed. Answered 504 GATEWAY_TIMEOUT, never the "safe to
 * retry" 503.
 */
export class CommitOutcomeUnknownError extends Error {
  override readonly name = 'CommitOutcomeUnknownError';
  readonly code = 'COMMIT_OUTCOME_UNKNOWN';
}

/** How to run one database call. */
export interface DatabaseCallOptions {
  /** `slave` reads from a replica when read replicas are configured; `master` (the default) is the primary. */
  mode?: 'master' | 'slave';
  /** Run `work` in a transaction, committed when it returns and rolled back when it throws. */
  transaction?: boolean;
  /** The deadline in ms (default {@link DATABASE_DEADLINES}.callMs). */
  timeoutMs?: number;
}

/** A pooled mysql2 connection: destroying it closes its socket and keeps it out of the pool. */
interface DestroyableConnection {
  destroy(): void;
}

/**
 * Runs one database call on a connection of its own, within a deadline counted from now that
 * covers waiting for a pooled connection, the connection's queue and every statement
 * (mysql2's own query timeout starts only when a statement becomes its connection's active
 * command, so statements queued behind a stalled one would have none). When the deadline
 * passes, the connection is destroyed, never returned to the pool, so no later call queues
 * behind the stalled statement; the server rolls back whatever was not committed. sql.js runs
 * in-process and cannot stall: there, no deadline applies (see {@link inProcess}).
 *
 * With `transaction`, the outcome is exact: a deadline or a broken connection before COMMIT
 * was sent means nothing is stored ({@link DatabaseDeadlineError} or the driver's error);
 * after COMMIT was sent and before its answer, the outcome is unknown
 * ({@link CommitOutcomeUnknownError}).
 *
 * @param dataSource - an initialised DataSource.
 * @param work - the statements to run, through the given EntityManager only.
 * @param options - primary or replica, transaction, deadline.
 * @returns what `work` returns.
 * @throws DatabaseDeadlineError, CommitOutcomeUnknownError, or whatever `work` or the driver throws.
 */
export async function withinDeadline<T>(
  dataSource: DataSource,
  work: (manager: EntityManager) => Promise<T>,
  { mode = 'master', transaction = false, timeoutMs = DATABASE_DEADLINES.callMs }: DatabaseCallOptions = {},
): Promise<T> {
  if (dataSource.options.type !== 'mysql') return inProcess(dataSource, work, transaction);
  const runner = dataSource.createQueryRunner(mode);
  let connection: DestroyableConnection | undefined;
  let committing = false;
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
      // The wait for a connection outlasted the deadline: the connection is unused, pool it again.
      await runner.release();
      throw new DatabaseDeadlineError(timeoutMs);
    }
    if (!transaction) return work(runner.manager);
    await runner.startTransaction();
    const result = await work(runner.manager);
    committing = true;
    await runner.commitTransaction();
    return result;
  })();
  try {
    return await Promise.race([call, deadline]);
  } catch (error) {
    if (committing && (expired || isDatabaseUnavailable(error))) {
      throw new CommitOutcomeUnknownError('The database did not confirm the commit.', { cause: error });
    }
    if (runner.isTransactionActive && !expired && !isDatabaseUnavailable(error)) {
      await Promise.race([runner.rollbackTransaction(), deadline]).catch(() => undefined);
    }
    throw error;
  } finally {
    clearTimeout(timer);
    // A stalled statement may still fail later, on its destroyed connection: nobody waits for it.
    if (expired) call.catch(() => undefined);
    // Pools the connection again, unless it was destroyed (then this only ends the runner).
    await runner.release();
  }
}

/**
 * A call on sql.js: in-process, and synchronous from BEGIN to COMMIT (it writes its file only
 * after COMMIT), so it can neither stall nor interleave with another call's transaction.
 */
function inProcess<T>(dataSource: DataSource, work: (manager: EntityManager) => Promise<T>, transaction: boolean): Promise<T> {
  return transaction ? dataSource.transaction(work) : work(dataSource.manager);
}
