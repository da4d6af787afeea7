import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { DEADLINE_EXCEEDED, isConflict, isConnectionLost } from './database-errors';
import { markUnreachable, nodeOf, readerOf } from './database-node';
import { DATABASE_DEADLINES } from '../limits';

/**
 * A call outlasted its deadline and its connection was destroyed before any COMMIT, so nothing of its transaction is stored:
 * 503, safe to retry. (A statement outside a transaction may have run; pets are only written in transactions.)
 */
export class DatabaseDeadlineError extends Error {
  override readonly name = 'DatabaseDeadlineError';
  readonly code = DEADLINE_EXCEEDED;

  constructor(timeoutMs: number) {
    super(`The database did not answer within ${timeoutMs} ms.`);
  }
}

/** COMMIT was sent and never confirmed, so it may have committed: 504, never the "safe to retry" 503. */
export class CommitOutcomeUnknownError extends Error {
  override readonly name = 'CommitOutcomeUnknownError';

  /** `written`: what the work returned before COMMIT (e.g. the new row), so the caller can look for it later. */
  constructor(
    message: string,
    options: ErrorOptions,
    readonly written: unknown,
  ) {
    super(message, options);
  }
}

export interface DatabaseCallOptions {
  /** `slave`: a replica in the read rotation (database-node.ts) if any; `master` (default): the primary. */
  mode?: 'master' | 'slave';
  transaction?: boolean;
  /** Outside the {@link withOneBudget} of the request that started it (e.g. follow-up after a reply). */
  background?: boolean;
  /** Default {@link DATABASE_DEADLINES}.callMs, cut to what is left of the request's budget. */
  timeoutMs?: number;
}

/** A pooled mysql2 connection: destroying it closes its socket and keeps it out of the pool. */
interface DestroyableConnection {
  destroy(): void;
}

/** The performance.now() at which the current request's database budget ends. */
const budgets = new AsyncLocalStorage<number>();

/**
 * Runs `work` (one HTTP request, app.ts) with one database budget: all its {@link withinDeadline} calls together end within
 * {@link DATABASE_DEADLINES}.callMs, so a request of several calls answers as quickly as one of one call.
 */
export function withOneBudget<T>(work: () => T): T {
  return budgets.run(performance.now() + DATABASE_DEADLINES.callMs, work);
}

const causalSessions = new WeakSet<DestroyableConnection>();

/** On Galera, `wsrep_sync_wait = 1` once per connection, so a pet created through any node is found through every other. */
async function readCausally(dataSource: DataSource, runner: QueryRunner, connection: DestroyableConnection): Promise<void> {
  if (!nodeOf(dataSource)?.galera || causalSessions.has(connection)) return;
  await runner.query('SET SESSION wsrep_sync_wait = 1');
  causalSessions.add(connection);
}

/**
 * Runs one call on a connection of its own, under one deadline covering the pool wait, the connection's queue and every
 * statement (docs/failures.md "The database"). mysql2's query timeout starts only when a statement becomes active, so
 * statements queued behind a stalled one would have none; at the deadline the connection is destroyed, so nothing queues
 * behind it. With `transaction`, a conflict (deadlock, Galera certification, lock wait) is run again within the same
 * deadline, so `work` may run more than once. A replica read whose connection fails is read again on the primary.
 * @throws DatabaseDeadlineError (503, nothing committed); CommitOutcomeUnknownError (504); what `work` or the driver throws.
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
        // A lock wait timeout rolls back only its statement: end the transaction before running it again.
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
    await runner.release();
  }
}

/** sql.js needs no deadline: in-process and synchronous from BEGIN to COMMIT, it can neither stall nor interleave. */
function inProcess<T>(dataSource: DataSource, work: (manager: EntityManager) => Promise<T>, transaction: boolean): Promise<T> {
  return transaction ? dataSource.transaction(work) : work(dataSource.manager);
}
