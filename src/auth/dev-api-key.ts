import { chmod, readFile, writeFile } from 'node:fs/promises';
import type { DatabaseConfig } from '../database/database-config';
import type { ApiKeyService } from './api-key.service';

/** What decides what happens to the development key: NODE_ENV, the configured database and the key's file. */
export interface DevApiKeyConfig {
  readonly nodeEnv: string;
  readonly database: DatabaseConfig;
  /** Absolute path of the development key file, `data/dev-api-key` under the working directory. */
  readonly file: string;
}

/**
 * What start-up found or did about the development key, for main.ts to print:
 * - `created`: a new key, saved to `file`; show it, this once;
 * - `present`: `file` holds a key this database knows and has not revoked; say where it is, not the key;
 * - `foreign`: `file` holds a key this MySQL database does not know (left from the embedded database, or revoked).
 */
export type DevApiKeyState =
  | { readonly state: 'created'; readonly key: string; readonly file: string }
  | { readonly state: 'present'; readonly file: string }
  | { readonly state: 'foreign'; readonly file: string };

async function readKeyFile(file: string): Promise<string | null> {
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Whether this set-up keeps a development key: outside production, on the embedded database's
 * file (an in-memory one, for tests, gets none). On MySQL keys come from the apikey CLI.
 *
 * @param config - NODE_ENV and the configured database.
 */
export function keepsDevApiKey(config: Pick<DevApiKeyConfig, 'nodeEnv' | 'database'>): boolean {
  return config.nodeEnv !== 'production' && config.database.type === 'sqlite' && config.database.path !== ':memory:';
}

/**
 * The development key (docs/api-keys.md "The development key"), checked on every start outside production, once
 * the server listens (so a start that fails never leaves a key nobody was shown):
 * - on the embedded database, `file` always ends up holding an active key of this database: the
 *   one it holds, or, when it is missing or holds a key this database does not know, a new key
 *   named "development", written readable by the owner only;
 * - on MySQL, nothing is ever created; a `file` left from an embedded run is checked against this
 *   database, so that start-up can say it does not belong here instead of letting
 *   `$(cat data/dev-api-key)` fail with 401.
 *
 * @param config.nodeEnv - NODE_ENV; `production` never reads or creates anything.
 * @param config.database - the configured database (an in-memory one, for tests, gets nothing).
 * @param config.file - where the key is kept.
 * @param apiKeys - the key service over the same database.
 * @returns what was found or done, or null when there is nothing to say (production, in memory, MySQL without the file).
 * @throws the file system's error when the file cannot be read (other than missing) or written.
 */
export async function ensureDevApiKey(config: DevApiKeyConfig, apiKeys: ApiKeyService): Promise<DevApiKeyState | null> {
  if (config.nodeEnv === 'production' || (config.database.type === 'sqlite' && config.database.path === ':memory:')) return null;
  const saved = await readKeyFile(config.file);
  const known = saved !== null && (await apiKeys.findActive(saved)) !== null;
  if (known) return { state: 'present', file: config.file };
  // MySQL: a file left from the embedded database is only reported.
  if (!keepsDevApiKey(config)) return saved === null ? null : { state: 'foreign', file: config.file };
  const { key } = await apiKeys.create('development');
  await writeFile(config.file, `${key}\n`, { mode: 0o600 });
  await chmod(config.file, 0o600); // also when it replaced an older file
  return { state: 'created', key, file: config.file };
}
