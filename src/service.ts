import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { buildApp, createApiKeys, readTrustedDocuments } from './app';
import type { ApiKeyService } from './auth/api-key.service';
import { type DevApiKeyState, ensureDevApiKey } from './auth/dev-api-key';
import { type Config, DEV_API_KEY_PATH } from './config';
import type { Database } from './database/database';
import { type DatabaseConfig, describeDatabase } from './database/database-config';
import { lockEmbeddedDatabase } from './database/embedded-lock';
import { openDatabase } from './database/open-database';
import { drainAndClose } from './http/graceful-shutdown';
import { describeSurfaces, originOf } from './http/landing-page.routes';
import { listenOn } from './net/listen-port';
import { createLogger } from './observability/logger';
import { type Metrics, createMetrics } from './observability/metrics.registry';
import { buildMetricsServer } from './observability/metrics.server';
import { ServiceState } from './observability/service-state';
import type { Tracing } from './observability/tracing';

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

/**
 * The long-lived resources of one process, closed in the reverse order of their making: whoever makes one registers
 * its close here at once (as Fastify's onClose hooks run in reverse, and the app's own resources close with it).
 */
class Resources {
  private readonly closes: Array<() => Promise<void> | void> = [];

  own(close: () => Promise<void> | void): void {
    this.closes.push(close);
  }

  /** Closes each, the latest first; a failure is logged to `log` and the next closes all the same. */
  async close(log: Pick<Logger, 'error'>): Promise<void> {
    for (const close of this.closes.splice(0).reverse()) {
      try {
        await close();
      } catch (error) {
        log.error({ err: error }, 'a resource failed to close');
      }
    }
  }
}

/** What a service is started with besides its configuration: the tracing main.ts started, and a test's replacements. */
export interface ServiceOptions {
  /** Started before the service's modules were loaded (its instrumentations patch them as they load); shut down last. */
  tracing?: Tracing;
  /** Another database than the configuration's (a test's own). */
  database?: DatabaseConfig;
  logger?: Logger;
  metrics?: Metrics;
  state?: ServiceState;
  /**
   * Whether the embedded database's file is locked against another process (default true). Only a test sharing one
   * file between the apps of one process says false.
   */
  lockEmbeddedFile?: boolean;
}

/** A started service: built, not yet listening. */
export interface Service {
  readonly app: FastifyInstance;
  readonly database: Database;
  /** The app's own: a key revoked through it is refused at once. */
  readonly apiKeys: ApiKeyService;
  readonly log: Logger;
  /** Listens on PORT and METRICS_PORT, logs the line naming every surface, then makes or shows the development key. */
  listen(): Promise<void>;
  /**
   * Drains and stops (docs/operations.md "Signals"), then closes every resource in the reverse order of its making;
   * `timed-out` when requests had to be cut after the grace period.
   */
  stop(): Promise<'clean' | 'timed-out'>;
  /** Closes every resource in the reverse order of its making, without a drain (a test's end). */
  close(): Promise<void>;
}

/**
 * Makes every long-lived resource of one process (docs/architecture.md "State"), each registering its close as it is
 * made: the embedded database's lock, the database, the metrics, the API keys, the app (which owns Redis's connections,
 * the change feed, its streams and the webhook dispatcher), the metrics listener; and owns the tracing it is given.
 * @throws ConfigError (a bad trusted document manifest, read before anything opens); the database's refusals
 *   (DatabaseUnreachableError, DatabaseRefusedError, MigrationLockTimeoutError); the embedded lock's error.
 */
export async function startService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const log = options.logger ?? createLogger(config.logLevel);
  const resources = new Resources();
  if (options.tracing) resources.own(() => options.tracing!.shutdown());
  try {
    // In production loadConfig has refused them already (docs/configuration.md "Production").
    for (const { name, suggestion, message } of config.misspeltVariables) log.warn({ variable: name, suggestion }, message);
    for (const { name, message } of config.deprecatedVariables) log.warn({ variable: name }, message);
    readTrustedDocuments(config);
    const databaseConfig = options.database ?? config.database;
    if (options.lockEmbeddedFile ?? true) resources.own(await lockEmbeddedDatabase(databaseConfig));
    const database = await openDatabase(databaseConfig, {
      attempts: config.databaseConnectAttempts,
      migrate: config.migrateOnStart,
      log,
      slowStatementMs: config.slowStatementMs,
      onRetry: ({ attempt, attempts, error, delayMs }) =>
        log.warn({ attempt, attempts, retryInMs: delayMs, reason: error.message }, 'database not reachable yet'),
    });
    resources.own(() => database.close());
    const metrics = options.metrics ?? createMetrics();
    const state = options.state ?? new ServiceState();
    // One instance for the app and the development key, so they share its cache.
    const apiKeys = createApiKeys(config, database, log);
    const app = await buildApp({ config, database, logger: log, metrics, state, apiKeys });
    resources.own(() => app.close());
    const metricsServer = await buildMetricsServer(metrics);
    resources.own(() => metricsServer.close());

    return {
      app,
      database,
      apiKeys,
      log,
      async listen() {
        await listenOn('PORT', config, () => app.listen({ port: config.port, host: config.host }));
        await listenOn('METRICS_PORT', config.metrics, () => metricsServer.listen({ port: config.metrics.port, host: config.metrics.host }));
        const { engine, replicas, words } = describeDatabase(databaseConfig);
        log.info(
          { database: engine, replicas, tracing: options.tracing?.enabled ?? false },
          `Pet Store gateway on ${words}, serving ${describeSurfaces(originOf(config.host, config.port))}; metrics ${originOf(config.metrics.host, config.metrics.port)}/metrics`,
        );
        // Only now that it serves: a start that failed before this point created no key.
        const devKey = await ensureDevApiKey({ nodeEnv: config.nodeEnv, database: databaseConfig, file: path.resolve(DEV_API_KEY_PATH) }, apiKeys);
        process.stdout.write(devKeyNotice(devKey, originOf(config.host, config.port)));
      },
      async stop() {
        const outcome = await drainAndClose(app, state, { drainMs: config.shutdown.drainSeconds * 1000, graceMs: config.shutdown.graceSeconds * 1000 });
        await resources.close(log);
        return outcome;
      },
      close: () => resources.close(log),
    };
  } catch (error) {
    await resources.close(log);
    throw error;
  }
}
