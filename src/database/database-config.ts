import path from 'node:path';

/** Where the data lives: MySQL (production) or the embedded SQLite file (docs/configuration.md, DATABASE_URL). */
export type DatabaseConfig =
  /** `replicaMaxLagSeconds`: a replica further behind leaves the read rotation. */
  | { readonly type: 'mysql'; readonly url: string; readonly replicaUrls?: readonly string[]; readonly replicaMaxLagSeconds?: number }
  /** `path` is a file path, or `':memory:'` for a throw-away database. */
  | { readonly type: 'sqlite'; readonly path: string };

/**
 * Where `database` keeps its data: `server` (MySQL, shared by every instance), `file` (the embedded database's file, this
 * process's alone while it runs) or `memory` (the embedded database in memory, gone at exit).
 */
export function storageOf(database: DatabaseConfig): 'server' | 'file' | 'memory' {
  if (database.type === 'mysql') return 'server';
  return database.path === ':memory:' ? 'memory' : 'file';
}

/**
 * How start-up names `database` (docs/operations.md "Start-up"): its engine, its read replicas' count, and the words of
 * the line naming every surface (`MySQL`, or `embedded SQLite (<path relative to the working directory>)`).
 */
export function describeDatabase(database: DatabaseConfig): { engine: DatabaseConfig['type']; replicas: number; words: string } {
  if (database.type === 'mysql') return { engine: 'mysql', replicas: database.replicaUrls?.length ?? 0, words: 'MySQL' };
  return { engine: 'sqlite', replicas: 0, words: `embedded SQLite (${path.relative('.', database.path)})` };
}
