import { chmod, readFile, writeFile } from 'node:fs/promises';
import { type DatabaseConfig, storageOf } from '../database/database-config';
import type { ApiKeyService } from './api-key.service';

export interface DevApiKeyConfig {
  readonly nodeEnv: string;
  readonly database: DatabaseConfig;
  /** Absolute path, `data/dev-api-key` under the working directory. */
  readonly file: string;
}

/** `created`: show the key, this once; `present`: say where it is, not the key; `foreign`: the file's key is not active here. */
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

/** Outside production, on the embedded database's file only: on a server (MySQL) keys come from the apikey CLI. */
export function keepsDevApiKey(config: Pick<DevApiKeyConfig, 'nodeEnv' | 'database'>): boolean {
  return config.nodeEnv !== 'production' && storageOf(config.database) === 'file';
}

/**
 * Makes sure `file` holds an active development key (docs/api-keys.md "The development key").
 * Call once the server listens, so a failed start never leaves a key nobody was shown. On MySQL
 * it only reports a leftover file, so start-up can explain the 401 it would get.
 * @returns null when there is nothing to say.
 * @throws the file system's errors, ENOENT aside.
 */
export async function ensureDevApiKey(config: DevApiKeyConfig, apiKeys: ApiKeyService): Promise<DevApiKeyState | null> {
  if (config.nodeEnv === 'production' || storageOf(config.database) === 'memory') return null;
  const saved = await readKeyFile(config.file);
  const known = saved !== null && (await apiKeys.authentication.findActive(saved)) !== null;
  if (known) return { state: 'present', file: config.file };
  // MySQL: a file left from the embedded database is only reported.
  if (!keepsDevApiKey(config)) return saved === null ? null : { state: 'foreign', file: config.file };
  const { key } = await apiKeys.create('development');
  await writeFile(config.file, `${key}\n`, { mode: 0o600 });
  await chmod(config.file, 0o600); // also when it replaced an older file
  return { state: 'created', key, file: config.file };
}
