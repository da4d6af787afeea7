import type { DataSource } from 'typeorm';

/** How long an instance waits for another one's migrations before it gives up, in seconds. */
export const MIGRATION_LOCK_WAIT_SECONDS = 60;

/** MySQL's ER_NOT_SUPPORTED_YET: what a Galera cluster (WSREP_ON=ON) answers to GET_LOCK. */
const ER_NOT_SUPPORTED_YET = 1235;

/** Raised when the server cannot take the migration lock at all (e.g. a Galera cluster). */
export class MigrationLockUnsupportedError extends Error {
  override readonly name = 'MigrationLockUnsupportedError';
}

/**
 * Runs `work` (migrating or reverting) while holding a MySQL advisory lock named after the
 * database (`GET_LOCK`), so that instances starting together migrate one after the other: the
 * first applies the migrations, the others find none pending. On SQLite, where the embedded
 * file lock already keeps out a second process, `work` simply runs.
 *
 * @param options.onUnsupported - what to do where GET_LOCK is refused (Galera clusters):
 *   `fail` (default: the server at start, which may be one of several) throws
 *   MigrationLockUnsupportedError; a function (the `db` CLI, run once by an operator) is told
 *   and `work` runs without the lock.
 * @returns what `work` returns.
 * @throws Error when the lock is not obtained within {@link MIGRATION_LOCK_WAIT_SECONDS};
 *   MigrationLockUnsupportedError; what `work` throws.
 */
export async function withMigrationLock<T>(
  dataSource: DataSource,
  work: () => Promise<T>,
  options: { onUnsupported?: 'fail' | ((reason: string) => void) } = {},
): Promise<T> {
  if (dataSource.options.type !== 'mysql') return work();
  const runner = dataSource.createQueryRunner('master');
  await runner.connect();
  try {
    let locked: unknown;
    try {
      [{ locked }] = (await runner.query(`SELECT GET_LOCK(CONCAT('petstore-migrations:', DATABASE()), ?) AS locked`, [MIGRATION_LOCK_WAIT_SECONDS])) as {
        locked: unknown;
      }[];
    } catch (error) {
      if ((error as { errno?: number }).errno !== ER_NOT_SUPPORTED_YET) throw error;
      const reason = `the database refuses GET_LOCK (${(error as Error).message})`;
      if (typeof options.onUnsupported !== 'function') {
        throw new MigrationLockUnsupportedError(
          `Cannot take the migration lock: ${reason}. Set DATABASE_MIGRATE_ON_START=false and run \`npm run db:migrate\` once instead.`,
        );
      }
      options.onUnsupported(reason);
      return await work();
    }
    if (Number(locked) !== 1) {
      throw new Error(`Another instance has held the migration lock for ${MIGRATION_LOCK_WAIT_SECONDS} s; giving up.`);
    }
    try {
      return await work();
    } finally {
      await runner.query(`SELECT RELEASE_LOCK(CONCAT('petstore-migrations:', DATABASE()))`);
    }
  } finally {
    await runner.release();
  }
}
