import type { FastifyPluginAsync } from 'fastify';
import { type DataSource, MigrationExecutor } from 'typeorm';
import { DATABASE_DEADLINES, withinDeadline } from '../database/database-deadline';
import { AppError } from '../errors/error-catalogue';

/** Shared with the shutdown sequence: once `draining`, `/readyz` answers 503. */
export interface ServiceState {
  draining: boolean;
}

/** What the health routes need. */
export interface HealthRoutesOptions {
  dataSource: DataSource;
  state: ServiceState;
}

/** How long one database check answers every `/readyz` probe (ms): probes cost at most one `SELECT 1` per second. */
export const READINESS_CACHE_MS = 1000;

/**
 * Checks the database for `/readyz`, at most once per {@link READINESS_CACHE_MS}: probes that
 * arrive while a check runs, or within that time after it, share its result. The check has
 * its own short deadline ({@link DATABASE_DEADLINES}.readinessMs), so a stalled database
 * makes probes fail quickly instead of hanging.
 *
 * @returns a function that resolves to null when ready, or to the reason it is not.
 */
function cachedDatabaseCheck(dataSource: DataSource): () => Promise<string | null> {
  // Migrations only run at start-up, so once none is pending that stays true.
  let migrated = false;
  let last: { at: number; result: Promise<string | null> } | undefined;
  const check = async (): Promise<string | null> => {
    try {
      migrated = await withinDeadline(
        dataSource,
        async (manager) => {
          await manager.query('SELECT 1');
          return migrated || !(await new MigrationExecutor(dataSource, manager.queryRunner).showMigrations());
        },
        { timeoutMs: DATABASE_DEADLINES.readinessMs },
      );
    } catch {
      return 'The database does not answer.';
    }
    return migrated ? null : 'Database migrations are pending.';
  };
  return () => {
    if (!last || Date.now() - last.at >= READINESS_CACHE_MS) last = { at: Date.now(), result: check() };
    return last.result;
  };
}

/**
 * `GET /healthz` (liveness: the process serves HTTP; never touches the database) and
 * `GET /readyz` (readiness: not shutting down, the database answers `SELECT 1` within 500 ms,
 * no migration is pending; one check per second at most, shared by every probe). Both are
 * public and outside the rate limits; a healthy answer is `200 {"status":"ok"}`, an unready
 * one the Error body with 503 SERVICE_UNAVAILABLE and a message saying why (README "Operations").
 */
export const healthRoutes: FastifyPluginAsync<HealthRoutesOptions> = async (app, { dataSource, state }) => {
  const databaseProblem = cachedDatabaseCheck(dataSource);
  const schema = { hide: true } as const;

  app.get('/healthz', { schema }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema }, async () => {
    if (state.draining) throw new AppError('SERVICE_UNAVAILABLE', 'Shutting down.');
    const problem = await databaseProblem();
    if (problem) throw new AppError('SERVICE_UNAVAILABLE', problem);
    return { status: 'ok' };
  });
};
