import type { DataSource } from 'typeorm';

/** How long an instance waits for another one's migrations before it gives up, in seconds. */
export const MIGRATION_LOCK_WAIT_SECONDS = 60;

/**
 * Runs `work` (migrating or reverting) while holding a MySQL advisory lock named after the
 * database (`GET_LOCK`), so that instances starting together migrate one after the other: the
 * first applies the migrations, the others find none pending. On SQLite, where the embedded
 * file lock already keeps out a second process, `work` simply runs.
 *
 * @returns what `work` returns.
 * @throws Error when the lock is not obtained within {@link MIGRATION_LOCK_WAIT_SECONDS}; what `work` throws.
 */
export async function withMigrationLock<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  if (dataSource.options.type !== 'mysql') return work();
  const runner = dataSource.createQueryRunner('master');
  await runner.connect();
  try {
    const [{ locked }] = await runner.query(`SELECT GET_LOCK(CONCAT('petstore-migrations:', DATABASE()), ?) AS locked`, [
      MIGRATION_LOCK_WAIT_SECONDS,
    ]);
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
