import { loadConfig } from '../config';
import { createDataSource } from '../database/data-source';
import { Database } from '../database/database';
import { DatabaseNode } from '../database/database-node';
import { lockEmbeddedDatabase } from '../database/embedded-lock';
import { openDatabase } from '../database/open-database';

/**
 * Runs `action` on the configured database (the embedded file locked against a running server), then closes everything.
 * With `migrate: false`, the primary alone, connected once and not migrated. The configuration is read as the server
 * reads it (docs/configuration.md "Production"): a misspelt variable is one line on stderr, an error in production.
 * @throws ConfigError (in production, also without an explicit database); the embedded lock's error; what `action` throws.
 */
export async function withDatabase(action: (database: Database) => Promise<void>, { migrate = true } = {}): Promise<void> {
  const config = loadConfig(process.env);
  for (const variable of [...config.misspeltVariables, ...config.deprecatedVariables]) process.stderr.write(`warning: ${variable.message}\n`);
  const unlock = await lockEmbeddedDatabase(config.database);
  try {
    const database = migrate
      ? await openDatabase(config.database, { attempts: config.databaseConnectAttempts })
      : new Database(new DatabaseNode('primary', 'primary', await createDataSource(config.database).initialize()));
    try {
      await action(database);
    } finally {
      await database.close();
    }
  } finally {
    await unlock();
  }
}
