import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { DEADLINE_EXCEEDED, isConflict, isConnectionLost } from './database-errors';
import { markUnreachable, nodeOf, readerOf } from './database-node';
import { DATABASE_DEADLINES } from '../limits';

/** A call outlasted its deadline before any COMMIT: nothing of its transaction is stored, so 503, safe to retry. */
export class DatabaseDeadlineError extends Error {
  override readonly name = 'DatabaseDeadlineError';
  readonly code = DEADLINE_EXCEEDED;

  constructor(timeoutMs: number) {
    super(`The database did not answer within ${timeoutMs} ms.`);
  }
}

/** COMMIT (or an autocommit write) was sent and never confirmed, so it may have committed: 504, never the "safe to retry" 503. */
export class CommitOutcomeUnknownError extends Error {
  override readonly name = 'CommitOutcomeUnknownError';

  /** `written`: what the work returned before COMMIT, so the caller can look for it later; undefined for an autocommit write. */
  constructor(
    message: string,
    options: ErrorOptions,
    readonly written: unknown,
  ) {
    super(message, options);
  }
}

export interface DatabaseCallOptions {
  /** `slave`: a replica in the read rotation, if any. */
  mode?: 'master' | 'slave';
  transaction?: boolean;
  /**
   * `work` is one statement that commits itself (autocommit, no transaction), e.g. one INSERT: failing before it is sent
   * (pool wait, the Galera causality SET), DatabaseDeadlineError (503, nothing stored); sent and never confirmed (deadline,
   * connection lost), CommitOutcomeUnknownError (504, `written` undefined); a conflict (1213, 1205) did not commit: rerun.
   */
  autocommitWrite?: boolean;
  /** The request's budget, shared by all its calls; without one (work after a reply, start-up, health), the call has `timeoutMs` alone. */
  budget?: DatabaseBudget;
  /** Cut to what is left of `budget`. */
  timeoutMs?: number;
}

/** Destroying a pooled mysql2 connection closes its socket and keeps it out of the pool. */
interface DestroyableConnection {
  destroy(): void;
}

/** One request's database budget: all its calls together end by `endsAt`, a `performance.now()` in ms (docs/failures.md "The database"). */
export interface DatabaseBudget {
  readonly endsAt: number;
}

/**
 * A budget of `DATABASE_DEADLINES.callMs` from now, started once per request at its arrival and passed down to every call
 * (not AsyncLocalStorage, whose promise hooks would tax every promise of every request: bench/README.md "What makes it fast").
 */
export function startDatabaseBudget(): DatabaseBudget {
  return { endsAt: performance.now() + DATABASE_DEADLINES.callMs };
}

const causalSessions = new WeakSet<DestroyableConnection>();

/** On Galera, so a pet created through any node is found through every other. */
async function readCausally(dataSource: DataSource, runner: QueryRunner, connection: DestroyableConnection): Promise<void> {
  if (!nodeOf(dataSource)?.galera || causalSessions.has(connection)) return;
  await runner.query('SET SESSION wsrep_sync_wait = 1');
  causalSessions.add(connection);
}

/**
 * Runs one call under one deadline covering pool wait, queue and every statement (docs/failures.md "The database"):
 * mysql2's query timeout starts only when a statement becomes active, so the connection is destroyed at the deadline.
 * A lost conflict is rerun, so `work` may run more than once. Throws DatabaseDeadlineError, CommitOutcomeUnknownError.
 */
export async function withinDeadline<T>(
  dataSource: DataSource,
  work: (manager: EntityManager) => Promise<T>,
  { mode = 'master', transaction = false, autocommitWrite = false, budget, timeoutMs = DATABASE_DEADLINES.callMs }: DatabaseCallOptions = {},
): Promise<T> {
  if (dataSource.options.type !== 'mysql') return inProcess(dataSource, work, transaction);
  if (budget !== undefined && budget.endsAt - performance.now() < timeoutMs) {
    timeoutMs = budget.endsAt - performance.now();
    if (timeoutMs <= 0) throw new DatabaseDeadlineError(DATABASE_DEADLINES.callMs);
  }
  const reader = mode === 'slave' ? readerOf(dataSource) : dataSource;
  if (reader === dataSource) return callOn(dataSource, work, { transaction, autocommitWrite }, timeoutMs);
  const started = performance.now();
  try {
    return await callOn(reader, work, { transaction, autocommitWrite }, timeoutMs);
  } catch (error) {
    if (!isConnectionLost(error)) throw error;
    // Out of the rotation until its next check; this read goes to the primary.
    markUnreachable(reader);
    return callOn(dataSource, work, { transaction, autocommitWrite }, timeoutMs - (performance.now() - started));
  }
}

async function callOn<T>(
  target: DataSource,
  work: (manager: EntityManager) => Promise<T>,
  { transaction, autocommitWrite }: { transaction: boolean; autocommitWrite: boolean },
  timeoutMs: number,
): Promise<T> {
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
      await runner.release();
      throw new DatabaseDeadlineError(timeoutMs);
    }
    await readCausally(target, runner, connection);
    if (!transaction && !autocommitWrite) return work(runner.manager);
    for (let attempt = 1; ; attempt++) {
      try {
        if (autocommitWrite) {
          // From here the statement may reach the server: its outcome is unknown until the server answers.
          committing = true;
          return await work(runner.manager);
        }
        await runner.startTransaction();
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

/** sql.js needs no deadline: synchronous from BEGIN to COMMIT, it can neither stall nor interleave. */
function inProcess<T>(dataSource: DataSource, work: (manager: EntityManager) => Promise<T>, transaction: boolean): Promise<T> {
  return transaction ? dataSource.transaction(work) : work(dataSource.manager);
}
