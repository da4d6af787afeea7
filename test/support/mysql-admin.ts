import { createConnection } from 'mysql2/promise';

/**
 * Creating and dropping whole MySQL/MariaDB databases, the one way the benchmark, the tests and
 * the tools do it. Each call opens one connection to the server named by the URL (without
 * selecting a database, so the database may be missing) and closes it before returning.
 */

/** The character set and collation of every database made here: the tables' own (see the migrations). */
const DATABASE_OPTIONS = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci';

/**
 * The database a `mysql://` URL names.
 *
 * @returns the name, percent-decoded; '' when the URL names none.
 */
export function databaseNameOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/**
 * The URL of another database on the same server, with the same user, password and options.
 *
 * @param name - the other database; '' for the server itself, with no database selected.
 * @returns e.g. `mysql://root@127.0.0.1:3306/other` from `mysql://root@127.0.0.1:3306/petstore` and `other`.
 */
export function siblingDatabaseUrl(url: string, name: string): string {
  const next = new URL(url);
  next.pathname = `/${encodeURIComponent(name)}`;
  return next.toString();
}

/** `name` as a quoted MySQL identifier. */
function quoted(name: string): string {
  if (name === '') throw new Error('The database URL names no database.');
  return `\`${name.replaceAll('`', '``')}\``;
}

/** Runs `statements` in order on one connection to the server of `url`, with no database selected. */
async function onServer(url: string, statements: string[]): Promise<void> {
  const admin = await createConnection(siblingDatabaseUrl(url, ''));
  try {
    for (const statement of statements) await admin.query(statement);
  } finally {
    await admin.end();
  }
}

/**
 * Creates the database `url` names, empty, in utf8mb4 with the utf8mb4_unicode_ci collation.
 *
 * @param options.replace - drop it first if it exists (default false: an existing one is an error).
 * @throws mysql2's error when the server cannot be reached, or the database exists and `replace` is false.
 */
export async function createDatabase(url: string, { replace = false }: { replace?: boolean } = {}): Promise<void> {
  const name = quoted(databaseNameOf(url));
  await onServer(url, [...(replace ? [`DROP DATABASE IF EXISTS ${name}`] : []), `CREATE DATABASE ${name} ${DATABASE_OPTIONS}`]);
}

/**
 * Drops the database `url` names, with every table in it; does nothing when it does not exist.
 *
 * @throws mysql2's error when the server cannot be reached.
 */
export async function dropDatabase(url: string): Promise<void> {
  await onServer(url, [`DROP DATABASE IF EXISTS ${quoted(databaseNameOf(url))}`]);
}
