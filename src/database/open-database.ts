import type { DataSource } from 'typeorm';
import type { DatabaseConfig } from '../config';
import { createDataSource } from './data-source';

/**
 * Connects and brings the schema up to date (spec: migrations run automatically at start).
 *
 * @param database - which database to open.
 * @returns the initialised DataSource, all migrations applied.
 * @throws the driver's error when the database cannot be reached or a migration fails.
 */
export async function openDatabase(database: DatabaseConfig): Promise<DataSource> {
  const dataSource = await createDataSource(database).initialize();
  try {
    await dataSource.runMigrations({ transaction: 'each' });
  } catch (error) {
    await dataSource.destroy();
    throw error;
  }
  return dataSource;
}
