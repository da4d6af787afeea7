import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import type { DatabaseConfig } from './database-config';
import { createDataSource } from './data-source';
import { isGaleraNode, watchReplicas } from './database-health';
import { DatabaseNode, registerNodes } from './database-node';
import { withMigrationLock } from './migration-lock';
import { DATABASE_DEADLINES } from '../limits';

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

/**
 * Raised at start-up when the database answered, or the host name did not resolve, in a way no
 * retry can change: a database that does not exist, a user refused. Says what to do, in one line.
 */
export class DatabaseRefusedError extends Error {
  override readonly name = 'DatabaseRefusedError';
}

/**
 * The driver's error codes that are permanent, with what to do about each (docs/operations.md
 * "Running on MySQL"). Anything else (ECONNREFUSED, ETIMEDOUT, ER_CON_COUNT_ERROR "too many connections",
 * EAI_AGAIN, a server still starting) is taken as transient and retried.
 */
const PERMANENT_ERRORS: Readonly<Record<string, string>> = Object.freeze({
  ER_BAD_DB_ERROR:
    'Create it and grant your user access to it (CREATE DATABASE, GRANT: docs/operations.md "Running on MySQL"), or fix its name in DATABASE_URL.',
  ER_ACCESS_DENIED_ERROR: 'Check the user and password in DATABASE_URL, or create that user (CREATE USER: docs/operations.md "Running on MySQL").',
  ER_DBACCESS_DENIED_ERROR: 'Grant the user access to this database (GRANT ALL PRIVILEGES ON <db>.* TO …: docs/operations.md "Running on MySQL").',
  ER_HOST_NOT_PRIVILEGED: "The server accepts this user from other hosts only: create the user for this one ('user'@'%').",
  ER_NOT_SUPPORTED_AUTH_MODE: "The user's authentication plugin is not supported by the driver: use mysql_native_password or caching_sha2_password.",
  ENOTFOUND: 'No such host: check the host name in DATABASE_URL.',
});

function describe(database: DatabaseConfig): string {
  if (database.type === 'sqlite') return database.path;
  const url = new URL(database.url);
  return `${url.protocol}//${url.host}${url.pathname}`;
}

/**
 * Connects (retrying a bounded number of times, transient failures only) and, unless told
 * not to, brings the schema up to date under the migration lock, so that several instances
 * starting together apply each migration once. On MySQL it also learns whether the server is
 * a Galera node (its sessions then read causally), opens each read replica with a DataSource
 * of its own (one that cannot be reached yet is connected later, reads going to the primary
 * meanwhile) and checks the replicas every second (docs/operations.md "Scale-out notes"); destroying the
 * returned DataSource stops those checks and closes the replicas too.
 *
 * @param database - which database to open.
 * @param options - connection attempts and a retry observer.
 * @returns the initialised DataSource, all migrations applied.
 * @throws DatabaseRefusedError at once, without retrying, for a permanent error (an unknown
 *   database, access denied, an unknown host); DatabaseUnreachableError when every attempt
 *   failed on a transient one; MigrationLockTimeoutError when another instance holds the
 *   migration lock too long; the driver's error when a migration fails.
 */
export async function openDatabase(database: DatabaseConfig, { attempts = 1, migrate = true, onRetry, log }: OpenDatabaseOptions = {}): Promise<DataSource> {
  let dataSource: DataSource | undefined;
  for (let attempt = 1; !dataSource; attempt++) {
    try {
      dataSource = await createDataSource(database, log).initialize();
    } catch (error) {
      const remedy = PERMANENT_ERRORS[(error as NodeJS.ErrnoException).code ?? ''];
      if (remedy) throw new DatabaseRefusedError(`Cannot use the database at ${describe(database)}: ${(error as Error).message}. ${remedy}`);
      if (attempt >= attempts) {
        throw new DatabaseUnreachableError(`Cannot reach the database at ${describe(database)} after ${attempts} attempt(s): ${(error as Error).message}`);
      }
      const delayMs = 500 * 2 ** (attempt - 1);
      onRetry?.({ attempt, attempts, error: error as Error, delayMs });
      await sleep(delayMs);
    }
  }
  await attachNodes(dataSource, database, log);
  if (!migrate) return dataSource;
  try {
    await withMigrationLock(dataSource, () => dataSource.runMigrations({ transaction: 'each' }));
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}

/**
 * Registers the primary and the read replicas behind `primary` (database-node.ts), starts the
 * replicas' checks, and makes `primary.destroy()` stop them and close the replicas first.
 */
async function attachNodes(primary: DataSource, database: DatabaseConfig, log: Logger | undefined): Promise<void> {
  const node = new DatabaseNode('primary', 'primary', primary);
  if (database.type !== 'mysql') return registerNodes({ primary: node, replicas: [], maxLagSeconds: DATABASE_DEADLINES.replicaMaxLagSeconds });
  node.galera = await isGaleraNode(primary.manager);
  const replicas = (database.replicaUrls ?? []).map(
    (url, index) => new DatabaseNode(`replica${index + 1}`, 'replica', createDataSource({ type: 'mysql', url }, log)),
  );
  registerNodes({ primary: node, replicas, maxLagSeconds: database.replicaMaxLagSeconds ?? DATABASE_DEADLINES.replicaMaxLagSeconds });
  const stopWatching = watchReplicas(primary);
  const destroyPrimary = primary.destroy.bind(primary);
  primary.destroy = async () => {
    stopWatching();
    await Promise.all(
      replicas.map(async (replica) => {
        await replica.connecting;
        if (replica.dataSource.isInitialized) await replica.dataSource.destroy();
      }),
    );
    await destroyPrimary();
  };
}
