import type { DataSource } from 'typeorm';
import { loadConfig } from '../config';
import { createDataSource } from '../database/data-source';
import { lockEmbeddedDatabase } from '../database/embedded-lock';
import { openDatabase } from '../database/open-database';

/**
 * Runs `action` on the configured database (the embedded file locked against a running server), then closes everything.
 * @throws ConfigError; the embedded lock's error; what `action` throws.
 */
export async function withDatabase(action: (dataSource: DataSource) => Promise<void>, { migrate = true } = {}): Promise<void> {
  const config = loadConfig(process.env);
  const unlock = await lockEmbeddedDatabase(config.database);
  try {
    const dataSource = migrate
      ? await openDatabase(config.database, { attempts: config.databaseConnectAttempts })
      : await createDataSource(config.database).initialize();
    try {
      await action(dataSource);
    } finally {
      await dataSource.destroy();
    }
  } finally {
    await unlock();
  }
}
