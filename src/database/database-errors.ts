/** Ours (database-deadline.ts): a call outlasted its deadline and was abandoned, uncommitted. */
export const DEADLINE_EXCEEDED = 'DATABASE_DEADLINE_EXCEEDED';

/**
 * The connection itself failed (the driver's and Node's socket codes): whatever was in flight
 * may or may not have reached the server, so a COMMIT in flight has an unknown outcome.
 */
const CONNECTION_LOST_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'PROTOCOL_ENQUEUE_AFTER_FATAL_ERROR',
  // 1927: the server killed the connection (KILL, or a node leaving a Galera cluster).
  'ER_CONNECTION_KILLED',
]);

/**
 * The server answered, and refused for now: the statement did nothing, and the same request
 * can succeed shortly (on this server once it is ready, or on another).
 */
const NOT_READY_CODES = new Set([
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  // 1047: a Galera node not (yet) ready for queries ("WSREP has not yet prepared node for application use").
  'ER_UNKNOWN_COM_ERROR',
  // 1180: a Galera node outside the primary component at COMMIT ("Got error … during COMMIT"): rolled back.
  'ER_ERROR_DURING_COMMIT',
  // 1290: a primary made read-only (e.g. during a failover).
  'ER_OPTION_PREVENTS_STATEMENT',
]);

/**
 * The transaction lost a conflict and was rolled back: 1213, a deadlock, which is also how
 * Galera reports a certification conflict, even at COMMIT; 1205, a lock wait timeout (the
 * caller rolls back the rest). Running the transaction again is safe.
 */
const CONFLICT_CODES = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

/** The driver's code of an error (TypeORM keeps the driver's error in `driverError`). */
function codeOf(error: unknown): unknown {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return candidate?.driverError?.code ?? candidate?.code;
}

function hasCode(codes: ReadonlySet<string>, error: unknown): boolean {
  const code = codeOf(error);
  return typeof code === 'string' && codes.has(code);
}

/** Tells whether a statement failed on a unique key (ER_DUP_ENTRY): the row is already there. */
export function isDuplicateKey(error: unknown): boolean {
  return codeOf(error) === 'ER_DUP_ENTRY';
}

/**
 * Tells whether the connection to the database failed (refused, reset, lost, killed): a
 * statement in flight may or may not have run.
 *
 * @param error - anything thrown by TypeORM or mysql2.
 */
export function isConnectionLost(error: unknown): boolean {
  return hasCode(CONNECTION_LOST_CODES, error);
}

/**
 * Tells whether a transaction failed on a conflict (deadlock, Galera certification conflict,
 * lock wait timeout) and may simply be run again (`withinDeadline` does, a bounded number of times).
 *
 * @param error - anything thrown by TypeORM or mysql2.
 */
export function isConflict(error: unknown): boolean {
  return hasCode(CONFLICT_CODES, error);
}

/**
 * Tells whether an error means the database cannot serve now (down, unreachable, too slow, a
 * Galera node not ready, a conflict that outlasted its retries), as opposed to a bug or a bad
 * query: answered 503 SERVICE_UNAVAILABLE with Retry-After (error-catalogue.ts).
 *
 * @param error - anything thrown by TypeORM or mysql2.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  return codeOf(error) === DEADLINE_EXCEEDED || isConnectionLost(error) || hasCode(NOT_READY_CODES, error) || isConflict(error);
}
