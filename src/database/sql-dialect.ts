import type { DataSource } from 'typeorm';

/**
 * What still differs between the two engines once TypeORM's entities and query builders have written the rest
 * (docs/architecture.md "State"): the database's clock, on which every lease and time is read and written, never
 * Node's; the lock of a `SELECT … FOR UPDATE`; whether a raw INSERT answers the new id; whether the engine is this
 * process's own. One object per Database, chosen when it opens (`Database.dialect`); only this file tells the engines apart
 * for the features.
 */
export interface SqlDialect {
  /**
   * The engine runs inside this process (sql.js, its file under the embedded lock): no other process or instance shares
   * its data, so a lease between instances is always this one's, and every write outside a transaction rewrites its file.
   */
  readonly embedded: boolean;
  /**
   * The database's clock, UTC, to the millisecond, as an SQL expression to compare with or store in a DATETIME(3) column
   * (on SQLite, the `YYYY-MM-DD HH:MM:SS.SSS` text TypeORM also writes and reads there).
   */
  readonly now: string;
  /**
   * The database's clock `seconds` from now (earlier when negative), to the millisecond on SQLite and the microsecond on
   * MySQL, as an SQL expression like {@link now}; the number is written into the SQL, so it is checked here.
   * @throws RangeError when `seconds` is not a finite number.
   */
  readonly later: (seconds: number) => string;
  /**
   * TypeORM's lock of a `SELECT … FOR UPDATE` (`lock` of a find, `setLock` of a query builder) on engines with row locks
   * (MySQL family); undefined on SQLite, which has none (nor needs any: one writer at a time, the whole file).
   */
  readonly rowLock: { readonly mode: 'pessimistic_write' } | undefined;
  /** Whether a raw INSERT's result carries the new row's id (`insertId`): mysql2's does; sql.js's does not (TypeORM's insert() reads it). */
  readonly rawInsertId: boolean;
}

/** `seconds`, checked to be a finite number (it is written into SQL). */
function finite(seconds: number): number {
  if (!Number.isFinite(seconds)) throw new RangeError(`an interval of ${seconds} seconds is not a finite number`);
  return seconds;
}

/** MySQL and MariaDB: UTC_TIMESTAMP(3) is the server's clock in UTC whatever the session's time zone. */
const MYSQL_DIALECT: SqlDialect = Object.freeze({
  embedded: false,
  now: 'UTC_TIMESTAMP(3)',
  later: (seconds: number) => `UTC_TIMESTAMP(3) + INTERVAL ${Math.round(finite(seconds) * 1e6)} MICROSECOND`,
  rowLock: Object.freeze({ mode: 'pessimistic_write' as const }),
  rawInsertId: true,
});

/** SQLite (sql.js): the time as the text TypeORM stores for a `datetime` column, which compares as the time does. */
const SQLITE_DIALECT: SqlDialect = Object.freeze({
  embedded: true,
  now: "strftime('%Y-%m-%d %H:%M:%f', 'now')",
  later: (seconds: number) => {
    const checked = finite(seconds);
    return `strftime('%Y-%m-%d %H:%M:%f', 'now', '${checked < 0 ? '-' : '+'}${Math.abs(checked).toFixed(3)} seconds')`;
  },
  rowLock: undefined,
  rawInsertId: false,
});

/**
 * The dialect of `dataSource`'s engine (initialised or not).
 * @throws Error for an engine the gateway does not run on.
 */
export function sqlDialectOf(dataSource: DataSource): SqlDialect {
  switch (dataSource.options.type) {
    case 'mysql':
      return MYSQL_DIALECT;
    case 'sqljs':
      return SQLITE_DIALECT;
    default:
      throw new Error(`no SQL dialect for the ${dataSource.options.type} driver`);
  }
}
