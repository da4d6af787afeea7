import type { DataSource, Logger } from 'typeorm';

/** The statements one DataSource has sent since the counter was attached or last reset. */
export interface StatementCounter {
  /** How many statements were sent whose SQL matches `pattern` (every statement without one). */
  count: (pattern?: RegExp) => number;
  /** Forgets the statements seen so far. */
  reset: () => void;
}

/** Matches the key lookups (SELECTs of the `api_key` table), not the writes of a key's last use. */
export const API_KEY_LOOKUP = /^\s*SELECT\b[\s\S]*[`"]api_key[`"]/i;
/** Matches the statements that read or write the `pet` table for a request, on every driver; not the change feed's. */
export const PET_TABLE = /^(?![\s\S]*seq[`"]? > \?)[\s\S]*[`"]pet[`"]/;

/**
 * Matches the change feed's own statements (src/events/), sent on its own schedule: the sequencer's look for unstamped
 * pets, its lease, its stamps and their isolation level, and the fan-out's reads. A stamp's START and COMMIT are not
 * among them: count {@link STAMP_TRANSACTION}, one per stamp transaction, to tell them apart.
 */
export const FEED_STATEMENT = /pet_feed|seq IS NULL|SET seq|seq[`"]? > \?|^SET TRANSACTION ISOLATION LEVEL READ COMMITTED$/;
/** The first statement of each stamp transaction: its read of the head row (locked on MySQL), with the lease's validity. */
export const STAMP_TRANSACTION = /AS [`"]valid[`"] FROM [`"]pet_feed[`"]/;

/**
 * Counts the SQL statements a DataSource sends, through a TypeORM logger (TypeORM hands every
 * statement to its logger before sending it, on MySQL and sql.js alike). Unlike the server's
 * `Questions` status counter, it sees only this DataSource's statements, so other test files
 * and other workers on the same MariaDB server cannot disturb the count. Replaces the
 * DataSource's logger (the test apps log no SQL).
 *
 * @param dataSource - an initialised DataSource, e.g. a TestApp's.
 */
export function countStatements(dataSource: DataSource): StatementCounter {
  let statements: string[] = [];
  const logger: Logger = {
    logQuery: (query) => void statements.push(query),
    logQueryError: () => undefined,
    logQuerySlow: () => undefined,
    logSchemaBuild: () => undefined,
    logMigration: () => undefined,
    log: () => undefined,
  };
  dataSource.setOptions({ logger });
  return {
    count: (pattern) => (pattern ? statements.filter((sql) => pattern.test(sql)).length : statements.length),
    reset: () => {
      statements = [];
    },
  };
}
