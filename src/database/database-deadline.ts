import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { DEADLINE_EXCEEDED, isConflict, isConnectionLost } from './database-errors';
import { markUnreachable, nodeOf, readerOf } from './database-node';
import { DATABASE_DEADLINES } from '../limits';

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

  /**
   * @param written - what the transaction's work returned before COMMIT was sent: what is
   *   stored if the COMMIT went through (e.g. the new row with its id), so that the caller can
   *   find out later.
   */
  constructor(
    message: string,
    options: ErrorOptions,
    readonly written: unknown,
  ) {
    super(message, options);
  }
}

/** How to run one database call. */
export interface DatabaseCallOptions {
  /** `slave` reads from a replica in the read rotation (database-node.ts), else the primary; `master` (the default) is the primary. */
  mode?: 'master' | 'slave';
  /** Run `work` in a transaction, committed when it returns and rolled back when it throws. */
  transaction?: boolean;
  /** Not part of the request that started it (e.g. cleaning up after a failure): outside its {@link withOneBudget}. */
  background?: boolean;
  /** The deadline in ms (default {@link DATABASE_DEADLINES}.callMs), cut to what is left of the request's budget. */
  timeoutMs?: number;
}

/** A pooled mysql2 connection: destroying it closes its socket and keeps it out of the pool. */
interface DestroyableConnection {
  destroy(): void;
}

/** When the database budget of the request being served ends (performance.now() ms), if one is. */
const budgets = new AsyncLocalStorage<number>();

/**
 * Runs `work` (a request: app.ts opens one per HTTP request) with one database budget: every
 * {@link withinDeadline} call it makes, together, ends within {@link DATABASE_DEADLINES}.callMs
 * from now, so a request of several calls (a key lookup, an Idempotency-Key claim, a create)
 * is answered as quickly as a request of one.
 *
 * @returns what `work` returns.
 */
export function withOneBudget<T>(work: () => T): T {
  return budgets.run(performance.now() + DATABASE_DEADLINES.callMs, work);
}

/** Pooled connections to Galera nodes whose session already reads causally. */
const causalSessions = new WeakSet<DestroyableConnection>();

/**
 * On a Galera node, makes the connection's session wait, before each read, until the node has
 * applied every write the cluster committed before it (`wsrep_sync_wait = 1`): a pet created
 * through any node is then found through every other, including one that just rejoined. Once
 * per pooled connection; nothing elsewhere.
 */
async function readCausally(dataSource: DataSource, runner: QueryRunner, connection: DestroyableConnection): Promise<void> {
  if (!nodeOf(dataSource)?.galera || causalSessions.has(connection)) return;
  await runner.query('SET SESSION wsrep_sync_wait = 1');
  causalSessions.add(connection);
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
 * ({@link CommitOutcomeUnknownError}); a transaction that loses a conflict (deadlock, Galera
 * certification conflict, lock wait timeout), at COMMIT or before, was rolled back by the
 * server and is run again, up to {@link DATABASE_DEADLINES}.conflictAttempts times within the
 * same deadline, then its error is thrown (503). A read sent to a replica whose connection
 * fails is read again on the primary, within the same deadline, and the replica leaves the
 * read rotation until its next check.
 *
 * @param dataSource - an initialised primary DataSource (from openDatabase).
 * @param work - the statements to run, through the given EntityManager only; with
 *   `transaction`, it may run more than once (each run rolled back but the last).
 * @param options - primary or replica, transaction, deadline (never past the budget of the
 *   request being served, {@link withOneBudget}, unless `background`).
 * @returns what `work` returns.
 * @throws DatabaseDeadlineError (also at once when the request's budget is spent),
 *   CommitOutcomeUnknownError, or whatever `work` or the driver throws.
 */
export async function withinDeadline<T>(
  dataSource: DataSource,
  work: (manager: EntityManager) => Promise<T>,
  { mode = 'master', transaction = false, background = false, timeoutMs = DATABASE_DEADLINES.callMs }: DatabaseCallOptions = {},
): Promise<T> {
  if (dataSource.options.type !== 'mysql') return inProcess(dataSource, work, transaction);
  const budgetEnd = background ? undefined : budgets.getStore();
  if (budgetEnd !== undefined && budgetEnd - performance.now() < timeoutMs) {
    timeoutMs = budgetEnd - performance.now();
    if (timeoutMs <= 0) throw new DatabaseDeadlineError(DATABASE_DEADLINES.callMs);
  }
  const reader = mode === 'slave' ? readerOf(dataSource) : dataSource;
  if (reader === dataSource) return callOn(dataSource, work, transaction, timeoutMs);
  const started = performance.now();
  try {
    return await callOn(reader, work, transaction, timeoutMs);
  } catch (error) {
    if (!isConnectionLost(error)) throw error;
    // The replica went away: out of the rotation until its next check finds it, and this read on the primary.
    markUnreachable(reader);
    return callOn(dataSource, work, transaction, timeoutMs - (performance.now() - started));
  }
}

/** {@link withinDeadline} on one server: `target`, the primary or a replica. */
async function callOn<T>(target: DataSource, work: (manager: EntityManager) => Promise<T>, transaction: boolean, timeoutMs: number): Promise<T> {
  const runner = target.createQueryRunner('master');
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
      // The wait for a connection outlasted the deadline: the connection is unused, pool it again.
      await runner.release();
      throw new DatabaseDeadlineError(timeoutMs);
    }
    await readCausally(target, runner, connection);
    if (!transaction) return work(runner.manager);
    for (let attempt = 1; ; attempt++) {
      committing = false;
      try {
        await runner.startTransaction();
        const result = await work(runner.manager);
        written = result;
        committing = true;
        await runner.commitTransaction();
        return result;
      } catch (error) {
        if (expired || !isConflict(error) || attempt >= DATABASE_DEADLINES.conflictAttempts) throw error;
        // The server rolled the transaction back (a lock wait timeout only its statement): end it, then run it again.
        await runner.rollbackTransaction();
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
