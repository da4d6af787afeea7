import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { DataSource } from 'typeorm';
import { ApiKey } from '../auth/api-key.entity';
import { Pet } from '../pets/pet.entity';
import { IdempotencyRecord } from '../idempotency/idempotency-record.entity';
import type { DatabaseConfig } from './database-config';
import { saveInOrder } from './embedded-file.saver';
import { TypeormPinoLogger } from './typeorm-pino.logger';
import { CreatePetAndApiKey1763769600000 } from './migrations/1763769600000-create-pet-and-api-key';
import { CreateIdempotencyKey1763856000000 } from './migrations/1763856000000-create-idempotency-key';
import { DATABASE_DEADLINES } from '../limits';

/** Every entity and migration, listed explicitly (no globs: they break between src/ and dist/). */
export const ENTITIES = [Pet, ApiKey, IdempotencyRecord];
/** In the order they run. */
export const MIGRATIONS = [CreatePetAndApiKey1763769600000, CreateIdempotencyKey1763856000000];

/**
 * Builds (does not connect) the TypeORM DataSource for a database configuration. The schema
 * is only ever changed by migrations (`synchronize` is off on every driver).
 *
 * @param database - a MySQL URL (one server: openDatabase opens each read replica with a
 *   DataSource of its own), or SQLite file path / `':memory:'` (sql.js, persisted to the file
 *   after every write when a path is given).
 * @param log - where slow statements, driver warnings and migrations are logged (JSON lines);
 *   nowhere when absent.
 * @returns an uninitialised DataSource; call `initialize()` then `runMigrations()`.
 */
export function createDataSource(database: DatabaseConfig, log?: Logger): DataSource {
  const common = {
    entities: ENTITIES,
    migrations: MIGRATIONS,
    synchronize: false,
    logging: false,
    // TypeORM logs slow statements whatever `logging` says: as JSON through pino, or not at all.
    logger: new TypeormPinoLogger(log ?? pino({ level: 'silent' })),
    maxQueryExecutionTime: DATABASE_DEADLINES.slowQueryMs,
  } as const;
  if (database.type === 'mysql') {
    return new DataSource({
      ...common,
      type: 'mysql',
      // One server per DataSource, never TypeORM's `replication`: mysql2's PoolCluster behind it
      // drops a node for good after a few failed connections, and cannot take a lagging replica
      // out of the rotation (database-node.ts routes the reads instead).
      url: database.url,
      charset: 'utf8mb4_unicode_ci',
      // BIGINT arrives as an exact decimal string; int64Transformer converts it without rounding.
      supportBigNumbers: true,
      bigNumberStrings: true,
      timezone: 'Z',
      // Fail fast when the database is down (answered 503): connecting may take 1 s. Stalls are
      // bounded per call by withinDeadline (database-deadline.ts), which covers what mysql2's
      // own query timeout does not: the wait for a connection and the connection's queue. The
      // pool makes new connections by itself once the database is back.
      connectTimeout: DATABASE_DEADLINES.connectMs,
      poolSize: DATABASE_DEADLINES.poolSize,
      // trace: mysql2 would capture a stack trace for every query (about 5% of a request's CPU,
      // bench/README.md "What makes it fast"), only to decorate error stacks; errors keep their own stack.
      extra: { enableKeepAlive: true, trace: false },
    });
  }
  const inMemory = database.path === ':memory:';
  if (!inMemory) mkdirSync(path.dirname(database.path), { recursive: true });
  return new DataSource({
    ...common,
    type: 'sqljs',
    // Read from the file at start; written back after every write, in order and atomically.
    ...(inMemory ? {} : { location: database.path, autoSave: true, autoSaveCallback: saveInOrder(database.path) }),
  });
}
