import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { DataSource } from 'typeorm';
import { ApiKey } from '../auth/api-key.entity';
import { AuditEvent } from '../audit/audit-event.entity';
import { Pet } from '../pets/pet.entity';
import { IdempotencyRecord } from '../idempotency/idempotency-record.entity';
import { PetFeedRecord } from '../events/pet-feed.entity';
import { WebhookEndpoint } from '../webhooks/webhook-endpoint.entity';
import { WebhookAttempt } from '../webhooks/webhook-attempt.entity';
import { WebhookRedelivery } from '../webhooks/webhook-redelivery.entity';
import { WebhookRecovery } from '../webhooks/webhook-recovery.entity';
import type { DatabaseConfig } from './database-config';
import { saveInOrder } from './embedded-file.saver';
import { TypeormPinoLogger } from './typeorm-pino.logger';
import { CreatePetAndApiKey1763769600000 } from './migrations/1763769600000-create-pet-and-api-key';
import { CreateIdempotencyKey1763856000000 } from './migrations/1763856000000-create-idempotency-key';
import { AddApiKeyKinds1795651200000 } from './migrations/1795651200000-add-api-key-kinds';
import { AddPetFeed1798156800000 } from './migrations/1798156800000-add-pet-feed';
import { CreateWebhookEndpoint1800000000000 } from './migrations/1800000000000-create-webhook-endpoint';
import { CreateAuditEvent1801000000000 } from './migrations/1801000000000-create-audit-event';
import { CreateWebhookAttempt1802000000000 } from './migrations/1802000000000-create-webhook-attempt';
import { DATABASE_DEADLINES } from '../limits';

/** Listed, not globbed: globs break between src/ and dist/. */
export const ENTITIES = [Pet, ApiKey, IdempotencyRecord, PetFeedRecord, WebhookEndpoint, AuditEvent, WebhookAttempt, WebhookRedelivery, WebhookRecovery];
export const MIGRATIONS = [
  CreatePetAndApiKey1763769600000,
  CreateIdempotencyKey1763856000000,
  AddApiKeyKinds1795651200000,
  AddPetFeed1798156800000,
  CreateWebhookEndpoint1800000000000,
  CreateAuditEvent1801000000000,
  CreateWebhookAttempt1802000000000,
];

/**
 * Builds an uninitialised DataSource for one server (MySQL) or sql.js; the schema changes only by migrations. A statement
 * slower than `slowStatementMs` is logged to `log` at warn.
 */
export function createDataSource(database: DatabaseConfig, log?: Logger, slowStatementMs: number = DATABASE_DEADLINES.slowQueryMs): DataSource {
  const common = {
    entities: ENTITIES,
    migrations: MIGRATIONS,
    synchronize: false,
    logging: false,
    // TypeORM logs slow statements whatever `logging` says: as JSON through pino, or not at all.
    logger: new TypeormPinoLogger(log ?? pino({ level: 'silent' })),
    maxQueryExecutionTime: slowStatementMs,
  } as const;
  if (database.type === 'mysql') {
    return new DataSource({
      ...common,
      type: 'mysql',
      // Not TypeORM's `replication`: mysql2's PoolCluster drops a node for good after a few failed connections and cannot
      // skip a lagging replica (Database.reader in database.ts routes reads instead).
      url: database.url,
      charset: 'utf8mb4_unicode_ci',
      // BIGINT as an exact decimal string, for int64Transformer.
      supportBigNumbers: true,
      bigNumberStrings: true,
      timezone: 'Z',
      // Fail fast when the database is down (503); stalls are bounded per call by withinDeadline.
      connectTimeout: DATABASE_DEADLINES.connectMs,
      poolSize: DATABASE_DEADLINES.poolSize,
      // trace: a stack trace captured per query only decorates error stacks (bench/README.md "What makes it fast").
      extra: { enableKeepAlive: true, trace: false },
    });
  }
  const inMemory = database.path === ':memory:';
  if (!inMemory) mkdirSync(path.dirname(database.path), { recursive: true });
  return new DataSource({
    ...common,
    type: 'sqljs',
    ...(inMemory ? {} : { location: database.path, autoSave: true, autoSaveCallback: saveInOrder(database.path) }),
  });
}
