import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { MIGRATION_LOCK } from '../limits';
import { isConflict, isDuplicateKey } from './database-errors';

/** Created outside the migrations, which run under the lock. */
const LOCK_TABLE = 'migrations_lock';

export class MigrationLockTimeoutError extends Error {
  override readonly name = 'MigrationLockTimeoutError';
}

/**
 * Runs `work` under the migration lock, so instances starting together migrate one after the other. A leased row, not
 * `GET_LOCK`, which holds on one Galera node only; a dead holder's lease expires. SQLite has the embedded file lock instead.
 * @throws MigrationLockTimeoutError after {@link MIGRATION_LOCK.waitSeconds}.
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
    await dataSource.query(`DELETE FROM ${LOCK_TABLE} WHERE name = ? AND expires_at < NOW(3)`, [name]);
    try {
      await dataSource.query(`INSERT INTO ${LOCK_TABLE} (name, holder, expires_at) VALUES (?, ?, NOW(3) + INTERVAL ${MIGRATION_LOCK.leaseSeconds} SECOND)`, [
        name,
        holder,
      ]);
      break;
    } catch (error) {
      // Held, or taken at the same moment on another Galera node.
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
