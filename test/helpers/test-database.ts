import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { DataSource } from 'typeorm';
import { EMBEDDED_DATABASE_PATH } from '../../src/config';
import type { Database } from '../../src/database/database';
import type { DatabaseConfig } from '../../src/database/database-config';
import { createDatabase, dropDatabase, siblingDatabaseUrl } from '../support/mysql-admin';
import { openDatabase } from '../../src/database/open-database';

/** Set to run the suite on MySQL/MariaDB, e.g. mysql://root@127.0.0.1:3306/test. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;

/** The driver this run is meant to use; a test checks that the app really uses it. */
export const EXPECTED_DRIVER = TEST_DATABASE_URL ? 'mysql' : 'sqljs';

/**
 * `test` for a test that needs MySQL/MariaDB (several processes on one database, the pool,
 * a server to cut or stall): it runs when TEST_DATABASE_URL is set, and is reported as skipped
 * on the embedded run, never left out. The MariaDB run (.ci/run always makes one) runs it.
 */
export const testOnMysql: jest.It = TEST_DATABASE_URL ? test : test.skip;

/** `describe` for a group of MySQL/MariaDB-only tests: skipped, and reported so, on the embedded run (see {@link testOnMysql}). */
export const describeOnMysql: jest.Describe = TEST_DATABASE_URL ? describe : describe.skip;

/**
 * A database of its own for one test file, so files never see each other's rows: a fresh
 * in-memory SQLite by default; with TEST_DATABASE_URL, a new database on that server,
 * dropped by `drop()`. Fails (never skips) when the server cannot be reached.
 */
export async function createTestDatabase(): Promise<{ database: DatabaseConfig; drop: () => Promise<void> }> {
  if (!TEST_DATABASE_URL) return { database: { type: 'sqlite', path: ':memory:' }, drop: async () => undefined };
  const url = siblingDatabaseUrl(TEST_DATABASE_URL, `petstore_test_${process.pid}_${randomBytes(4).toString('hex')}`);
  await createDatabase(url);
  return { database: { type: 'mysql', url }, drop: () => dropDatabase(url) };
}

/**
 * A test database of its own, opened and migrated: for suites that work on the database
 * directly, without the app.
 *
 * @returns the Database, its writer's DataSource, and `close()` that closes it and drops the database.
 */
export async function openTestDatabase(): Promise<{ database: Database; dataSource: DataSource; close: () => Promise<void> }> {
  const { database: config, drop } = await createTestDatabase();
  const database = await openDatabase(config);
  return {
    database,
    dataSource: database.writer,
    close: async () => {
      await database.close();
      await drop();
    },
  };
}

/** What a built process (a CLI, the server) needs to run on a test database of its own. */
export interface ProcessDatabase {
  /** A new temporary directory to run the process in. */
  cwd: string;
  /** The process's database, for the test to open too. */
  database: DatabaseConfig;
  /** Its environment's database settings: DATABASE_URL on MySQL, EMBEDDED_DATABASE=true on the embedded default (so production starts too). */
  env: Record<string, string>;
  /** Drops the MySQL database (the temporary directory stays). */
  drop: () => Promise<void>;
}

/**
 * A working directory and a database for a built process: by default the embedded file the
 * process opens when DATABASE_URL is unset (data/petstore.sqlite under the new directory);
 * with TEST_DATABASE_URL, a new database on that server ({@link createTestDatabase}), named to
 * the process by DATABASE_URL.
 *
 * @param prefix - the start of the temporary directory's name, e.g. `db-cli-`.
 */
export async function createProcessDatabase(prefix: string): Promise<ProcessDatabase> {
  const cwd = await mkdtemp(path.join(tmpdir(), prefix));
  if (!TEST_DATABASE_URL) {
    return { cwd, database: { type: 'sqlite', path: path.join(cwd, EMBEDDED_DATABASE_PATH) }, env: { EMBEDDED_DATABASE: 'true' }, drop: async () => undefined };
  }
  const { database, drop } = await createTestDatabase();
  return { cwd, database, env: { DATABASE_URL: (database as { url: string }).url }, drop };
}
