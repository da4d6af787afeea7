import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { MIGRATION_LOCK } from '../limits';
import { isConflict, isDuplicateKey } from './database-errors';

/** The lock's table, created outside the migrations (they run under the lock). */
const LOCK_TABLE = 'migrations_lock';

/** Raised when another instance holds the migration lock for longer than {@link MIGRATION_LOCK.waitSeconds}. */
export class MigrationLockTimeoutError extends Error {
  override readonly name = 'MigrationLockTimeoutError';
}

/**
 * Runs `work` (migrating or reverting) while holding the database's migration lock, so that
 * instances starting together migrate one after the other: the first applies the migrations,
 * the others then find none pending. The lock is a row of `migrations_lock` with a lease, not
 * `GET_LOCK`: on a Galera cluster `GET_LOCK` holds on one node only, while two nodes inserting
 * the same row conflict and only one commits, so the row holds cluster-wide (as on one
 * server). The holder renews the lease while `work` runs; a holder that dies leaves a lease
 * that expires within {@link MIGRATION_LOCK.leaseSeconds}. On SQLite, where the embedded file lock already
 * keeps out a second process, `work` simply runs.
 *
 * @param dataSource - an initialised DataSource on the primary.
 * @param work - what to do under the lock.
 * @returns what `work` returns.
 * @throws MigrationLockTimeoutError when the lock is not obtained within
 *   {@link MIGRATION_LOCK.waitSeconds}; what `work` or the database throws.
 */
export async function withMigrationLock<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  if (dataSource.options.type !== 'mysql') return work();
  const holder = randomUUID();
  const name = 'migrations';
  await dataSource.query(
    `CREATE TABLE IF NOT EXISTS ${LOCK_TABLE} (name VARCHAR(64) NOT NULL PRIMARY KEY, holder CHAR(36) NOT NULL, expires_at DATETIME(3) NOT NULL) ENGINE=InnoDB`,
  );
  const giveUpAt = Date.now() + MIGRATION_LOCK.waitSeconds * 1000;
  for (;;) {
    // A lease its holder stopped renewing (it died): free it.
    await dataSource.query(`DELETE FROM ${LOCK_TABLE} WHERE name = ? AND expires_at < NOW(3)`, [name]);
    try {
      await dataSource.query(`INSERT INTO ${LOCK_TABLE} (name, holder, expires_at) VALUES (?, ?, NOW(3) + INTERVAL ${MIGRATION_LOCK.leaseSeconds} SECOND)`, [
        name,
        holder,
      ]);
      break;
    } catch (error) {
      // Someone holds the lock (its row is there), or took it at the same moment on another Galera node.
      if (!isDuplicateKey(error) && !isConflict(error)) throw error;
    }
    if (Date.now() > giveUpAt) {
      throw new MigrationLockTimeoutError(`Another instance has held the migration lock for ${MIGRATION_LOCK.waitSeconds} s; giving up.`);
    }
    await sleep(MIGRATION_LOCK.retryMs);
  }
  const renewal = setInterval(
    () => {
      dataSource
        .query(`UPDATE ${LOCK_TABLE} SET expires_at = NOW(3) + INTERVAL ${MIGRATION_LOCK.leaseSeconds} SECOND WHERE name = ? AND holder = ?`, [name, holder])
        .catch(() => undefined);
    },
    (MIGRATION_LOCK.leaseSeconds * 1000) / 3,
  );
  try {
    return await work();
  } finally {
    clearInterval(renewal);
    await dataSource.query(`DELETE FROM ${LOCK_TABLE} WHERE name = ? AND holder = ?`, [name, holder]);
  }
}
