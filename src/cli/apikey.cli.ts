import 'reflect-metadata';
import { Command } from 'commander';
import { ApiKeyService } from '../auth/api-key.service';
import { withDatabase } from './cli-database';
import { positiveIntegerArgument } from './cli-options';
import { API_KEY_LIMITS } from '../limits';

/** Runs `action` with an ApiKeyService on the configured database, then closes everything. */
function withApiKeys(action: (apiKeys: ApiKeyService) => Promise<void>): Promise<void> {
  return withDatabase((database) => action(new ApiKeyService(database)));
}

const program = new Command('apikey')
  .description('Manage the API keys of the Pet Store gateway (uses DATABASE_URL, or the embedded database).')
  .showHelpAfterError();

program
  .command('create')
  .description('create a key and print it alone on stdout; it is stored hashed and cannot be shown again')
  .argument('<name>', `who or what the key is for (1-${API_KEY_LIMITS.nameMaxLength} characters)`)
  .action((name: string) =>
    withApiKeys(async (apiKeys) => {
      const { key } = await apiKeys.create(name);
      process.stdout.write(`${key}\n`);
    }),
  );

program
  .command('list')
  .description('list keys: id, name, last four characters, created, revoked')
  .action(() =>
    withApiKeys(async (apiKeys) => {
      const rows = (await apiKeys.list()).map((k) =>
        [k.id, k.name, `…${k.keyHint}`, k.createdAt.toISOString(), k.revokedAt?.toISOString() ?? 'active'].join('\t'),
      );
      process.stdout.write(['id\tname\tkey\tcreated\trevoked', ...rows].join('\n') + '\n');
    }),
  );

program
  .command('revoke')
  .description('revoke a key at once')
  .argument('<id>', 'the key id shown by list', positiveIntegerArgument)
  .action((id: number) =>
    withApiKeys(async (apiKeys) => {
      if (!(await apiKeys.revoke(id))) throw new Error(`no active key has id ${id}`);
      process.stderr.write(`revoked key ${id}\n`);
    }),
  );

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`apikey: ${(error as Error).message ?? error}\n`);
  process.exit(1);
});
