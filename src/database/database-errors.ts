/** Ours (DatabaseDeadlineError), not the driver's. */
export const DEADLINE_EXCEEDED = 'DATABASE_DEADLINE_EXCEEDED';

/** The connection failed: whatever was in flight may or may not have reached the server. */
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

/** The server refused for now: the statement did nothing and may succeed shortly. */
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

/** Safe to run again: 1213 is also Galera's certification conflict, even at COMMIT; 1205 rolls back only its statement. */
const CONFLICT_CODES = new Set(['ER_LOCK_DEADLOCK', 'ER_LOCK_WAIT_TIMEOUT']);

/** TypeORM wraps the driver's error in `driverError`. */
function codeOf(error: unknown): unknown {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown } } | null;
  return candidate?.driverError?.code ?? candidate?.code;
}

function hasCode(codes: ReadonlySet<string>, error: unknown): boolean {
  const code = codeOf(error);
  return typeof code === 'string' && codes.has(code);
}

/** ER_DUP_ENTRY: the row is already there. */
export function isDuplicateKey(error: unknown): boolean {
  return codeOf(error) === 'ER_DUP_ENTRY';
}

/** The connection failed (refused, reset, lost, killed): a statement in flight may or may not have run. */
export function isConnectionLost(error: unknown): boolean {
  return hasCode(CONNECTION_LOST_CODES, error);
}

/** A transaction lost a conflict and may simply be run again. */
export function isConflict(error: unknown): boolean {
  return hasCode(CONFLICT_CODES, error);
}

/** The database cannot serve now, as opposed to a bug: answered 503 with Retry-After (error-catalogue.ts). */
export function isDatabaseUnavailable(error: unknown): boolean {
  return codeOf(error) === DEADLINE_EXCEEDED || isConnectionLost(error) || hasCode(NOT_READY_CODES, error) || isConflict(error);
}

/** A call outlasted its deadline before any COMMIT: nothing of its transaction is stored, so 503, safe to retry. */
export class DatabaseDeadlineError extends Error {
  override readonly name = 'DatabaseDeadlineError';
  readonly code = DEADLINE_EXCEEDED;

  /** `timeoutMs`: the call's deadline, in ms; what was left of a request's budget is a fraction, named in whole ms. */
  constructor(timeoutMs: number) {
    super(`The database did not answer within ${Math.round(timeoutMs)} ms.`);
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
