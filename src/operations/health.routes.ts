import type { FastifyPluginAsync } from 'fastify';
import type { DataSource } from 'typeorm';
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

/**
 * `GET /healthz` (liveness: the process serves HTTP; never touches the database) and
 * `GET /readyz` (readiness: not shutting down, the database answers `SELECT 1`, no migration
 * is pending). Both are public and outside the rate limits; a healthy answer is
 * `200 {"status":"ok"}`, an unready one the Error body with 503 SERVICE_UNAVAILABLE and a
 * message saying why (README "Operations").
 */
export const healthRoutes: FastifyPluginAsync<HealthRoutesOptions> = async (app, { dataSource, state }) => {
  // Migrations only run at start-up, so once none is pending that stays true.
  let migrated = false;
  const schema = { hide: true } as const;

  app.get('/healthz', { schema }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema }, async () => {
    if (state.draining) throw new AppError('SERVICE_UNAVAILABLE', 'Shutting down.');
    try {
      await dataSource.query('SELECT 1');
      migrated ||= !(await dataSource.showMigrations());
    } catch {
      throw new AppError('SERVICE_UNAVAILABLE', 'The database does not answer.');
    }
    if (!migrated) throw new AppError('SERVICE_UNAVAILABLE', 'Database migrations are pending.');
    return { status: 'ok' };
  });
};
