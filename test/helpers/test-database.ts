import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { DatabaseConfig } from '../../src/database/database-config';
import { createDatabase, dropDatabase, siblingDatabaseUrl } from '../../src/database/mysql-admin';
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
 * A test database of its own, opened and migrated: for suites that work on the DataSource
 * directly, without the app.
 *
 * @returns the DataSource, and `close()` that destroys it and drops the database.
 */
export async function openTestDatabase(): Promise<{ dataSource: DataSource; close: () => Promise<void> }> {
  const { database, drop } = await createTestDatabase();
  const dataSource = await openDatabase(database);
  return {
    dataSource,
    close: async () => {
      await dataSource.destroy();
      await drop();
    },
  };
}
