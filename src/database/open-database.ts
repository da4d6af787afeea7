import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { DatabaseConfig } from './database-config';
import { createDataSource } from './data-source';
import { withMigrationLock } from './migration-lock';

/** How to connect at start-up. */
export interface OpenDatabaseOptions {
  /** Connection attempts before giving up (default 1); the pauses between them double from 0.5 s. */
  attempts?: number;
  /** Apply pending migrations (default true); with false, only connect (`/readyz` fails while any is pending). */
  migrate?: boolean;
  /** Told of each failed attempt that will be retried, with the pause before the next, in ms. */
  onRetry?: (failure: { attempt: number; attempts: number; error: Error; delayMs: number }) => void;
  /** Where the database layer logs slow statements and driver warnings (JSON lines); nowhere by default. */
  log?: Logger;
}

/** Raised when the database cannot be reached at start-up; the message names where, without credentials. */
export class DatabaseUnreachableError extends Error {
  override readonly name = 'DatabaseUnreachableError';
}

function describe(database: DatabaseConfig): string {
  if (database.type === 'sqlite') return database.path;
  const url = new URL(database.url);
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/**
 * Connects (retrying a bounded number of times) and, unless told not to, brings the schema up
 * to date under the migration lock, so that several instances starting together apply each
 * migration once.
 *
 * @param database - which database to open.
 * @param options - connection attempts and a retry observer.
 * @returns the initialised DataSource, all migrations applied.
 * @throws DatabaseUnreachableError when every attempt failed; MigrationLockUnsupportedError
 *   where GET_LOCK is refused (Galera); the driver's error when a migration fails.
 */
export async function openDatabase(database: DatabaseConfig, { attempts = 1, migrate = true, onRetry, log }: OpenDatabaseOptions = {}): Promise<DataSource> {
  let dataSource: DataSource | undefined;
  for (let attempt = 1; !dataSource; attempt++) {
    try {
      dataSource = await createDataSource(database, log).initialize();
    } catch (error) {
      if (attempt >= attempts) {
        throw new DatabaseUnreachableError(`Cannot reach the database at ${describe(database)} after ${attempts} attempt(s): ${(error as Error).message}`);
      }
      const delayMs = 500 * 2 ** (attempt - 1);
      onRetry?.({ attempt, attempts, error: error as Error, delayMs });
      await sleep(delayMs);
    }
  }
  if (!migrate) return dataSource;
  try {
    await withMigrationLock(dataSource, () => dataSource.runMigrations({ transaction: 'each' }));
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}
