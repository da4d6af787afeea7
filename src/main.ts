import { ConfigError, loadConfig } from './config';
import { type Tracing, startTracing } from './observability/tracing';

/** The one-line refusals start-up prints as they are (their messages say what to do); anything else is prefixed. By name: their modules load with the service, after tracing. */
const KNOWN_REFUSALS = new Set(['ConfigError', 'DatabaseUnreachableError', 'DatabaseRefusedError', 'MigrationLockTimeoutError', 'PortUnavailableError']);

/**
 * `npm start` (docs/operations.md "Start-up"): reads the settings, starts tracing before the service's modules load (its
 * instrumentations patch fastify, mysql2, ioredis and pino as they are required), starts the service and listens; on
 * SIGTERM/SIGINT drains and stops, exiting 1 if requests outlast the grace period (docs/operations.md "Signals").
 */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  let tracing: Tracing;
  try {
    tracing = startTracing(config.tracing);
  } catch (error) {
    throw new ConfigError(`Invalid configuration: ${(error as Error).message}`);
  }
  const { startService } = await import('./service');
  const service = await startService(config, { tracing });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    service.log.info({ signal, ...config.shutdown }, 'shutting down: draining, then finishing the requests in flight');
    const outcome = await service.stop();
    if (outcome === 'clean') service.log.info('stopped cleanly');
    else service.log.error({ graceSeconds: config.shutdown.graceSeconds }, 'requests still running after the grace period were cut off');
    process.exit(outcome === 'clean' ? 0 : 1);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  await service.listen();
}

main().catch((error: unknown) => {
  const known = error instanceof Error && KNOWN_REFUSALS.has(error.name);
  process.stderr.write(`${known ? error.message : `Start-up failed: ${(error as Error).message ?? error}`}\n`);
  process.exit(1);
});
