import type { FastifyPluginAsync } from 'fastify';
import { type DataSource, MigrationExecutor } from 'typeorm';
import { withinDeadline } from '../database/database-deadline';
import { checkNodes } from '../database/database-health';
import { AppError } from '../errors/error-catalogue';
import { DATABASE_DEADLINES } from '../limits';
import type { ServiceState } from './service-state';
import { SURFACE_PATHS } from '../surface-paths';

/** What the health routes need. */
export interface HealthRoutesOptions {
  dataSource: DataSource;
  state: ServiceState;
}

/**
 * Whether the schema is up to date on the primary, for `/readyz`. Migrations only run at
 * start-up, so once none is pending that stays true and is not asked again.
 *
 * @returns a function that resolves to true when no migration is pending; false when some are,
 *   or the primary cannot tell within DATABASE_DEADLINES.readinessMs.
 */
function migrationsApplied(dataSource: DataSource): () => Promise<boolean> {
  let migrated = false;
  let last: { at: number; answer: Promise<boolean> } | undefined;
  const ask = () =>
    withinDeadline(dataSource, async (manager) => !(await new MigrationExecutor(dataSource, manager.queryRunner).showMigrations()), {
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
 * `GET /healthz` (liveness: the process serves HTTP; never touches the database) and
 * `GET /readyz` (readiness: not shutting down; the primary answers within 500 ms and, on a
 * Galera cluster, is Synced in the primary component; no migration is pending). The database
 * servers are checked at most once per second (database-health.ts), shared by every probe.
 * Both are public and outside the rate limits. A ready answer is `200 {"status":"ok","nodes":[…]}`,
 * an unready one the Error body with 503 SERVICE_UNAVAILABLE, a message saying why, and the
 * same `nodes`: each server's NodeState (database-node.ts; a replica out of the read rotation does not
 * make the instance unready: reads go to the primary meanwhile). docs/operations.md "Endpoints".
 */
export const healthRoutes: FastifyPluginAsync<HealthRoutesOptions> = async (app, { dataSource, state }) => {
  const migrated = migrationsApplied(dataSource);
  const schema = { hide: true } as const;

  app.get(SURFACE_PATHS.healthz, { schema }, async () => ({ status: 'ok' }));

  app.get(SURFACE_PATHS.readyz, { schema }, async (_request, reply) => {
    const nodes = await checkNodes(dataSource);
    const primary = nodes[0];
    const problem = state.draining
      ? 'Shutting down.'
      : !primary.ready
        ? `The database (${primary.name}) cannot serve: ${primary.state}.`
        : !(await migrated())
          ? 'Database migrations are pending.'
          : undefined;
    if (!problem) return { status: 'ok', nodes };
    const error = new AppError('SERVICE_UNAVAILABLE', problem);
    return reply
      .code(error.status)
      .headers(error.headers)
      .send({ ...error.toBody(), nodes });
  });
};
