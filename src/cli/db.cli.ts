import 'reflect-metadata';
import { Command } from 'commander';
import { withMigrationLock } from '../database/migration-lock';
import { seedPets } from '../pets/pet.seed';
import { withDatabase } from './cli-database';
import { positiveIntegerArgument } from './cli-options';

const program = new Command('db').description('Database tasks of the Pet Store gateway (uses DATABASE_URL, or the embedded database).').showHelpAfterError();

program
  .command('migrate')
  .description('apply the pending migrations (the server also does this at start), under the migration lock')
  .action(() =>
    withDatabase(
      async ({ writer: dataSource }) => {
        const applied = await withMigrationLock(dataSource, () => dataSource.runMigrations({ transaction: 'each' }));
        process.stdout.write(applied.length ? applied.map((m) => `applied ${m.name}\n`).join('') : 'no pending migration\n');
      },
      { migrate: false },
    ),
  );

program
  .command('revert')
  .description('undo the last applied migration, under the migration lock')
  .action(() =>
    withDatabase(
      async ({ writer: dataSource }) => {
        const before = await dataSource.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM migrations').catch(() => [{ n: 0 }]);
        if (Number(before[0].n) === 0) throw new Error('no applied migration to revert');
        await withMigrationLock(dataSource, () => dataSource.undoLastMigration({ transaction: 'each' }));
        process.stdout.write('reverted the last migration\n');
      },
      { migrate: false },
    ),
  );

program
  .command('seed')
  .description('add the real-names dataset: pets named from dog-names and cat-names, over 3 statuses and 20 categories (migrates first)')
  .option('-c, --count <n>', 'how many pets to add', positiveIntegerArgument, 10_000)
  .action(({ count }: { count: number }) =>
    withDatabase(async (database) => {
      const added = await seedPets(database.writer, count);
      process.stdout.write(`added ${added} pets\n`);
    }),
  );

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`db: ${(error as Error).message ?? error}\n`);
  process.exit(1);
});
