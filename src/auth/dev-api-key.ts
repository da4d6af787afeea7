import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { DatabaseConfig } from '../database/database-config';
import type { ApiKeyService } from './api-key.service';

/** What decides whether a development key is made: NODE_ENV and the configured database. */
export interface DevApiKeyConfig {
  readonly nodeEnv: string;
  readonly database: DatabaseConfig;
}

/**
 * On the embedded default outside production, makes sure the first start has a key to use:
 * when no active key exists, creates one named "development" and writes it, readable by the
 * owner only, to `dev-api-key` beside the database file, so the README's examples work
 * verbatim. With DATABASE_URL set or NODE_ENV=production, nothing is ever created.
 *
 * @param config.nodeEnv - NODE_ENV; `production` never creates a key.
 * @param config.database - the configured database; only a SQLite file gets a key.
 * @returns the new key and the file it was written to, or null when nothing was created.
 */
export async function ensureDevApiKey(config: DevApiKeyConfig, apiKeys: ApiKeyService): Promise<{ key: string; file: string } | null> {
  if (config.nodeEnv === 'production' || config.database.type !== 'sqlite' || config.database.path === ':memory:') {
    return null;
  }
  if ((await apiKeys.countActive()) > 0) return null;
  const { key } = await apiKeys.create('development');
  const file = path.join(path.dirname(config.database.path), 'dev-api-key');
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return { key, file };
}
