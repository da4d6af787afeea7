import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { DataSource } from 'typeorm';
import { Database } from './database';
import type { DatabaseConfig } from './database-config';
import { createDataSource } from './data-source';
import { isGaleraNode } from './database-health';
import { DatabaseNode } from './database-node';
import { withMigrationLock } from './migration-lock';
import { DATABASE_DEADLINES } from '../limits';

export interface OpenDatabaseOptions {
  /** Default 1; the pauses between them double from 0.5 s. */
  attempts?: number;
  /** Default true; with false, `/readyz` fails while a migration is pending. */
  migrate?: boolean;
  onRetry?: (failure: { attempt: number; attempts: number; error: Error; delayMs: number }) => void;
  /** Slow statements and driver warnings; nowhere by default. */
  log?: Logger;
  /** A statement taking longer, in milliseconds, is logged at warn; `DATABASE_DEADLINES.slowQueryMs` by default. */
  slowStatementMs?: number;
}

/** Its message names where, without credentials. */
export class DatabaseUnreachableError extends Error {
  override readonly name = 'DatabaseUnreachableError';
}

/** A start-up failure no retry can change (unknown database or host, user refused); its message says what to do. */
export class DatabaseRefusedError extends Error {
  override readonly name = 'DatabaseRefusedError';
}

/** Permanent codes, with their remedy (docs/operations.md "Running on MySQL"); anything else is retried. */
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
 * Connects, retrying transient failures, and migrates under the migration lock so instances starting together apply each
 * migration once, each one it applies an info line on `log`; opens and watches the replicas (docs/operations.md "Scale-out
 * notes"). `close()` the returned Database.
 * @throws DatabaseRefusedError (no retry); DatabaseUnreachableError; MigrationLockTimeoutError; a failed migration's error.
 */
export async function openDatabase(
  database: DatabaseConfig,
  { attempts = 1, migrate = true, onRetry, log, slowStatementMs }: OpenDatabaseOptions = {},
): Promise<Database> {
  let dataSource: DataSource | undefined;
  for (let attempt = 1; !dataSource; attempt++) {
    try {
      dataSource = await createDataSource(database, log, slowStatementMs).initialize();
    } catch (error) {
      const remedy = PERMANENT_ERRORS[(error as NodeJS.ErrnoException).code ?? ''];
      if (remedy) throw new DatabaseRefusedError(`Cannot use the database at ${describe(database)}: ${(error as Error).message}. ${remedy}`);
      if (attempt >= attempts) {
        throw new DatabaseUnreachableError(`Cannot reach the database at ${describe(database)} after ${attempts} attempt(s): ${(error as Error).message}`);
      }
      const delayMs = DATABASE_DEADLINES.startupRetryMs * 2 ** (attempt - 1);
      onRetry?.({ attempt, attempts, error: error as Error, delayMs });
      await sleep(delayMs);
    }
  }
  const opened = await withReplicas(dataSource, database, log, slowStatementMs);
  if (!migrate) return opened;
  try {
    const applied = await withMigrationLock(dataSource, () => dataSource.runMigrations({ transaction: 'each' }));
    for (const migration of applied) log?.info({ component: 'database', migration: migration.name }, 'applied migration');
  } catch (error) {
    await opened.close();
    throw error;
  }
  return opened;
}

/** The Database of `primary` and the configured replicas (MySQL only), their checks started. */
async function withReplicas(primary: DataSource, database: DatabaseConfig, log: Logger | undefined, slowStatementMs: number | undefined): Promise<Database> {
  const node = new DatabaseNode('primary', 'primary', primary);
  if (database.type !== 'mysql') return new Database(node);
  node.galera = await isGaleraNode(primary.manager);
  const replicas = (database.replicaUrls ?? []).map(
    (url, index) => new DatabaseNode(`replica${index + 1}`, 'replica', createDataSource({ type: 'mysql', url }, log, slowStatementMs)),
  );
  const opened = new Database(node, replicas, database.replicaMaxLagSeconds);
  opened.watchReplicas();
  return opened;
}
