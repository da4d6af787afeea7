import { mkdirSync } from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import type { DatabaseConfig } from './database-config';

/**
 * Takes the embedded database file for this process alone. sql.js keeps the database in
 * memory and rewrites the file after each write, so two processes on one file would lose
 * each other's writes; the lock turns that into a clear error instead.
 *
 * @param database - the configured database; MySQL and in-memory databases need no lock.
 * @returns a function that releases the lock.
 * @throws Error naming the file when another process (a running server, the apikey CLI) holds it.
 */
export async function lockEmbeddedDatabase(database: DatabaseConfig): Promise<() => Promise<void>> {
  if (database.type !== 'sqlite' || database.path === ':memory:') return async () => undefined;
  mkdirSync(path.dirname(database.path), { recursive: true });
  try {
    return await lockfile.lock(database.path, { realpath: false });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
    throw new Error(
      `The embedded database ${database.path} is in use by another process (a running server?). ` +
        'Stop it first, or set DATABASE_URL to a MySQL database that several processes can share.',
      { cause: error },
    );
  }
}
