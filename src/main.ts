import 'reflect-metadata';
import path from 'node:path';
import { buildApp } from './app';
import { ApiKey } from './auth/api-key.entity';
import { ApiKeyService } from './auth/api-key.service';
import { ensureDevApiKey } from './auth/dev-api-key';
import { ConfigError, loadConfig } from './config';
import { lockEmbeddedDatabase } from './database/embedded-lock';
import { openDatabase } from './database/open-database';

/**
 * `npm start`: reads the configuration, opens and migrates the database, creates the
 * development key on a fresh embedded database, and serves until SIGINT/SIGTERM.
 */
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const unlock = await lockEmbeddedDatabase(config.database);
  const dataSource = await openDatabase(config.database);
  const devKey = await ensureDevApiKey(config, new ApiKeyService(dataSource.getRepository(ApiKey)));
  const app = await buildApp({ config, dataSource });

  const shutdown = async (signal: string) => {
    app.log.info({ signal }, 'shutting down');
    await app.close();
    await dataSource.destroy();
    await unlock();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));

  await app.listen({ port: config.port, host: config.host });
  const where = config.database.type === 'mysql' ? 'MySQL' : `embedded SQLite (${path.relative('.', config.database.path)})`;
  app.log.info({ database: config.database.type }, `Pet Store gateway serving /graphql and /v1 on ${where}`);
  if (devKey) {
    process.stdout.write(
      `\n  Development API key (shown once, also saved to ${path.relative('.', devKey.file)}):\n\n    ${devKey.key}\n\n` +
        `  Try: curl -H "Authorization: Bearer ${devKey.key}" http://${config.host}:${config.port}/v1/pets\n\n`,
    );
  }
}

main().catch((error: unknown) => {
  const message = error instanceof ConfigError ? error.message : `Start-up failed: ${(error as Error).message ?? error}`;
  process.stderr.write(`${message}\n`);
  process.exit(1);
});
