import type { EntityManager } from 'typeorm';
import type { Database } from './database';
import { DatabaseDeadlineError, isConnectionLost } from './database-errors';
import { DATABASE_DEADLINES } from '../limits';

export interface DatabaseCallOptions {
  /** `slave`: a replica in the read rotation, if any. */
  mode?: 'master' | 'slave';
  /** In one transaction: the server's default isolation, or READ COMMITTED (no gap locks; rows others are inserting are passed over). */
  transaction?: boolean | 'READ COMMITTED';
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

/** One request's database budget: all its calls together end by `endsAt`, a `performance.now()` in ms (docs/failures.md "The database"). */
export interface DatabaseBudget {
  readonly endsAt: number;
  /** The request's id, for the slow-statement log line of any of its calls. */
  readonly requestId?: string;
}

/**
 * A budget of `DATABASE_DEADLINES.callMs` from now for request `requestId`, started once per request at its arrival and
 * passed down to every call (not AsyncLocalStorage, whose promise hooks would tax every promise of every request:
 * bench/README.md "What makes it fast"); it also carries the request id to the slow-statement log.
 */
export function startDatabaseBudget(requestId?: string): DatabaseBudget {
  return { endsAt: performance.now() + DATABASE_DEADLINES.callMs, ...(requestId !== undefined && { requestId }) };
}

/**
 * Runs one call on `database` under one deadline covering pool wait, queue and every statement (docs/failures.md
 * "The database"; DatabaseNode.call): on its writer, or with `mode: 'slave'` on its reader, falling back to the writer
 * when the replica's connection is lost. A lost conflict is rerun, so `work` may run more than once.
 * @throws DatabaseDeadlineError; CommitOutcomeUnknownError; what `work` throws.
 */
export async function withinDeadline<T>(
  database: Database,
  work: (manager: EntityManager) => Promise<T>,
  { mode = 'master', transaction = false, autocommitWrite = false, budget, timeoutMs = DATABASE_DEADLINES.callMs }: DatabaseCallOptions = {},
): Promise<T> {
  // sql.js has no deadline (DatabaseNode.call), so no budget either.
  if (database.writer.options.type !== 'mysql') return database.primary.call(work, timeoutMs, { transaction, autocommitWrite });
  if (budget !== undefined && budget.endsAt - performance.now() < timeoutMs) {
    timeoutMs = budget.endsAt - performance.now();
    if (timeoutMs <= 0) throw new DatabaseDeadlineError(DATABASE_DEADLINES.callMs);
  }
  const requestId = budget?.requestId;
  const reader = mode === 'slave' ? database.reader() : database.primary;
  if (reader === database.primary) return reader.call(work, timeoutMs, { transaction, autocommitWrite, requestId });
  const started = performance.now();
  try {
    return await reader.call(work, timeoutMs, { transaction, autocommitWrite, requestId });
  } catch (error) {
    if (!isConnectionLost(error)) throw error;
    // Out of the rotation until its next check; this read goes to the primary.
    database.markUnreachable(reader);
    return database.primary.call(work, timeoutMs - (performance.now() - started), { transaction, autocommitWrite, requestId });
  }
}
