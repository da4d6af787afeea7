// First: instrumentations patch fastify, mysql2, ioredis and pino as they are required (docs/operations.md "Tracing").
import { tracing } from './observability/tracing';
import 'reflect-metadata';
import path from 'node:path';
import { buildApp, createApiKeys } from './app';
import { type DevApiKeyState, ensureDevApiKey } from './auth/dev-api-key';
import { ConfigError, DEV_API_KEY_PATH, loadConfig } from './config';
import { lockEmbeddedDatabase } from './database/embedded-lock';
import { MigrationLockTimeoutError } from './database/migration-lock';
import { DatabaseRefusedError, DatabaseUnreachableError, openDatabase } from './database/open-database';
import { describeSurfaces, originOf } from './http/landing-page.routes';
import { PortUnavailableError, listenOn } from './net/listen-port';
import { drainAndClose } from './http/graceful-shutdown';
import type { ServiceState } from './observability/service-state';
import { createLogger } from './observability/logger';
import { createMetrics } from './observability/metrics.registry';
import { buildMetricsServer } from './observability/metrics.server';

/** What start-up prints of the development key (docs/api-keys.md "The development key"): the key itself only when just created. */
function devKeyNotice(devKey: DevApiKeyState | null, origin: string): string {
  if (!devKey) return '';
  const file = path.relative('.', devKey.file);
  switch (devKey.state) {
    case 'created':
      return (
        `\n  Development API key (shown once, also saved to ${file}):\n\n    ${devKey.key}\n\n` +
        `  Try: curl -H "Authorization: Bearer ${devKey.key}" ${origin}/v1/pets\n\n`
      );
    case 'present':
      return `Development API key: in ${file} (API_KEY=$(cat ${file}))\n`;
    case 'foreign':
      return `${file} holds no key of this database (it is the embedded database's, or revoked): create one with npm run -s apikey -- create <name>\n`;
  }
}

/** `npm start` (docs/operations.md "Start-up"); on SIGTERM/SIGINT drains, exiting 1 if requests outlast the grace period (docs/operations.md "Signals"). */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const log = createLogger(config.logLevel);
  // In production loadConfig has refused them already (docs/configuration.md "Production").
  for (const { name, suggestion, message } of config.misspeltVariables) log.warn({ variable: name, suggestion }, message);
  const unlock = await lockEmbeddedDatabase(config.database);
  const database = await openDatabase(config.database, {
    attempts: config.databaseConnectAttempts,
    migrate: config.migrateOnStart,
    log,
    slowStatementMs: config.slowStatementMs,
    onRetry: ({ attempt, attempts, error, delayMs }) =>
      log.warn({ attempt, attempts, retryInMs: delayMs, reason: error.message }, 'database not reachable yet'),
  });
  const metrics = createMetrics();
  const state: ServiceState = { draining: false };
  // One instance for the app and the development key, so they share its cache.
  const apiKeys = createApiKeys(config, database, log);
  const app = await buildApp({ config, database, logger: log, metrics, state, apiKeys });
  const metricsServer = await buildMetricsServer(metrics);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal, ...config.shutdown }, 'shutting down: draining, then finishing the requests in flight');
    const outcome = await drainAndClose(app, state, {
      drainMs: config.shutdown.drainSeconds * 1000,
      graceMs: config.shutdown.graceSeconds * 1000,
    });
    await metricsServer.close();
    await database.close();
    await unlock();
    // The spans of the last requests, before the process ends.
    await tracing.shutdown();
    if (outcome === 'clean') log.info('stopped cleanly');
    else log.error({ graceSeconds: config.shutdown.graceSeconds }, 'requests still running after the grace period were cut off');
    process.exit(outcome === 'clean' ? 0 : 1);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));

  await listenOn('PORT', config, () => app.listen({ port: config.port, host: config.host }));
  await listenOn('METRICS_PORT', config.metrics, () => metricsServer.listen({ port: config.metrics.port, host: config.metrics.host }));
  const where = config.database.type === 'mysql' ? 'MySQL' : `embedded SQLite (${path.relative('.', config.database.path)})`;
  log.info(
    {
      database: config.database.type,
      replicas: config.database.type === 'mysql' ? (config.database.replicaUrls?.length ?? 0) : 0,
      tracing: tracing.enabled,
    },
    `Pet Store gateway on ${where}, serving ${describeSurfaces(originOf(config.host, config.port))}; metrics ${originOf(config.metrics.host, config.metrics.port)}/metrics`,
  );
  // Only now that it serves: a start that failed before this point created no key.
  const devKey = await ensureDevApiKey({ nodeEnv: config.nodeEnv, database: config.database, file: path.resolve(DEV_API_KEY_PATH) }, apiKeys);
  process.stdout.write(devKeyNotice(devKey, originOf(config.host, config.port)));
}

main().catch((error: unknown) => {
  const known =
    error instanceof ConfigError ||
    error instanceof DatabaseUnreachableError ||
    error instanceof DatabaseRefusedError ||
    error instanceof MigrationLockTimeoutError ||
    error instanceof PortUnavailableError;
  const message = known ? (error as Error).message : `Start-up failed: ${(error as Error).message ?? error}`;
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
