import type { FastifyPluginAsync } from 'fastify';
import { MigrationExecutor } from 'typeorm';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { AppError } from '../errors/error-catalogue';
import { DATABASE_DEADLINES } from '../limits';
import type { RedisHealthMonitor } from './redis-health.monitor';
import type { ServiceState } from './service-state';
import { SURFACE_PATHS } from '../surface-paths';

export interface HealthRoutesOptions {
  database: Database;
  state: ServiceState;
  /** With REDIS_URL: its state is in the body, and with RATE_LIMIT_ON_REDIS_FAILURE=refuse its absence fails readiness. */
  redisHealth?: RedisHealthMonitor;
}

/** Migrations only run at start-up, so once none is pending the primary is not asked again. */
function migrationsApplied(database: Database): () => Promise<boolean> {
  let migrated = false;
  let last: { at: number; answer: Promise<boolean> } | undefined;
  const ask = () =>
    withinDeadline(database, async (manager) => !(await new MigrationExecutor(database.writer, manager.queryRunner).showMigrations()), {
      timeoutMs: DATABASE_DEADLINES.readinessMs,
    })
      .catch(() => false)
      .then((done) => (migrated = done));
  return async () => {
    if (migrated) return true;
    // Probes within DATABASE_DEADLINES.nodeCheckIntervalMs share one answer, as they share the nodes' check.
    if (!last || Date.now() - last.at >= DATABASE_DEADLINES.nodeCheckIntervalMs) last = { at: Date.now(), answer: ask() };
    return last.answer;
  };
}

/**
 * `GET /healthz` (liveness; never touches the database) and `GET /readyz` (readiness: 200, or 503
 * SERVICE_UNAVAILABLE with the reason; both carry `nodes`, and `redis` with REDIS_URL). docs/operations.md "Endpoints".
 */
export const healthRoutes: FastifyPluginAsync<HealthRoutesOptions> = async (app, { database, state, redisHealth }) => {
  const migrated = migrationsApplied(database);
  const schema = { hide: true } as const;

  app.get(SURFACE_PATHS.healthz, { schema }, async () => ({ status: 'ok' }));

  app.get(SURFACE_PATHS.readyz, { schema }, async (_request, reply) => {
    const nodes = await database.checkNodes();
    const primary = nodes[0];
    const problem = state.draining
      ? 'Shutting down.'
      : !primary.ready
        ? `The database (${primary.name}) cannot serve: ${primary.state}.`
        : !(await migrated())
          ? 'Database migrations are pending.'
          : redisHealth && !redisHealth.ready
            ? 'Redis cannot be reached, and RATE_LIMIT_ON_REDIS_FAILURE is refuse.'
            : undefined;
    const redis = redisHealth && { redis: redisHealth.report() };
    if (!problem) return { status: 'ok', nodes, ...redis };
    const error = new AppError('SERVICE_UNAVAILABLE', problem);
    return reply
      .code(error.status)
      .headers(error.headers)
      .send({ ...error.toBody(), nodes, ...redis });
  });
};
