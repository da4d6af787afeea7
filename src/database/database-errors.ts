/** Ours (database-deadline.ts): a call outlasted its deadline and was abandoned, uncommitted. */
export const DEADLINE_EXCEEDED = 'DATABASE_DEADLINE_EXCEEDED';

/** Error codes of the MySQL driver and of Node's sockets that mean "the database cannot be reached now". */
const UNAVAILABLE_CODES = new Set([
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
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  DEADLINE_EXCEEDED,
]);

/**
 * Tells whether an error means the database is down, unreachable or too slow (a query or
 * connection timeout), as opposed to a bug or a bad query.
 *
 * @param error - anything thrown by TypeORM or mysql2 (TypeORM keeps the driver's error in `driverError`).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const candidate = error as { code?: unknown; driverError?: { code?: unknown }; fatal?: unknown } | null;
  const code = candidate?.driverError?.code ?? candidate?.code;
  return typeof code === 'string' && UNAVAILABLE_CODES.has(code);
}
