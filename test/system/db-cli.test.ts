import path from 'node:path';
import type { DatabaseConfig } from '../../src/database/database-config';
import { MIGRATIONS } from '../../src/database/data-source';
import { openDatabase } from '../../src/database/open-database';
import { Pet } from '../../src/pets/pet.entity';
import { built, runNode } from '../helpers/processes';
import { createProcessDatabase } from '../helpers/test-database';

/** `npm run db:migrate | db:revert | db:seed` and `apikey`, end to end on the run's database. */
describe('db CLI', () => {
  let cwd: string;
  let env: Record<string, string>;
  let database: DatabaseConfig;
  let drop: () => Promise<void> = async () => undefined;
  const db = (...args: string[]) => runNode(built('src/cli/db.cli.js'), args, { cwd, env });

  beforeAll(async () => {
    ({ cwd, database, env, drop } = await createProcessDatabase('db-cli-'));
  });
  afterAll(() => drop());

  test.each([
    ['db.cli.js', ['--help'], /Usage: db \[options\] \[command\][\s\S]*migrate[\s\S]*revert[\s\S]*seed/],
    ['db.cli.js', ['migrate', '--help'], /Usage: db migrate/],
    ['db.cli.js', ['revert', '--help'], /Usage: db revert/],
    ['db.cli.js', ['seed', '--help'], /Usage: db seed \[options\][\s\S]*--count <n>[\s\S]*default: 10000/],
    ['apikey.cli.js', ['--help'], /Usage: apikey \[options\] \[command\][\s\S]*create[\s\S]*list[\s\S]*revoke/],
  ])('when %s is asked %p, then it prints its usage and exits 0', async (script, args, usage) => {
    const result = await runNode(built(`src/cli/${script}`), args, { cwd, env });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(usage);
  });

  test('when migrate, seed and revert run in turn, then each does its one job and says so', async () => {
    expect((await db('migrate')).stdout).toBe(MIGRATIONS.map((migration) => `applied ${migration.name}\n`).join(''));
    expect((await db('migrate')).stdout).toBe('no pending migration\n');

    const seeded = await db('seed', '--count', '60');
    expect(seeded).toMatchObject({ code: 0, stdout: 'added 60 pets\n' });
    const opened = await openDatabase(database);
    try {
      const pets = await opened.writer.getRepository(Pet).find();
      expect(pets).toHaveLength(60);
      expect(new Set(pets.map((pet) => pet.status))).toEqual(new Set(['available', 'pending', 'sold']));
      expect(new Set(pets.map((pet) => pet.categoryId)).size).toBe(20);
    } finally {
      await opened.close();
    }

    expect(await db('revert')).toMatchObject({ code: 0, stdout: 'reverted the last migration\n' });
    expect((await db('migrate')).stdout).toBe(`applied ${MIGRATIONS.at(-1)!.name}\n`);
  });

  test.each([
    ['db.cli.js', ['migrate']],
    ['apikey.cli.js', ['list']],
  ])('when %s %p runs with NODE_ENV=production and no explicit database, then it exits 1 naming both ways out', async (script, args) => {
    const result = await runNode(built(`src/cli/${script}`), args, { cwd, env: { NODE_ENV: 'production' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^\w+: Invalid configuration: DATABASE_URL: NODE_ENV=production needs an explicit database: set DATABASE_URL, or EMBEDDED_DATABASE=true/,
    );
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });

  test('when seed gets a bad count, then it exits 1 naming the option', async () => {
    const result = await db('seed', '--count', '0');
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/--count <n>.*must be a positive integer/);
  });
});

/** `npm run typeorm -- migration:show`: TypeORM's own CLI on ormconfig.ts, the server's configuration. */
describe('TypeORM CLI (ormconfig.ts)', () => {
  let cwd: string;
  let env: Record<string, string>;
  let drop: () => Promise<void> = async () => undefined;
  const typeorm = (...args: string[]) =>
    runNode(path.resolve(__dirname, '..', '..', 'node_modules', 'typeorm', 'cli.js'), ['-d', built('ormconfig.js'), ...args], { cwd, env });

  beforeAll(async () => {
    ({ cwd, env, drop } = await createProcessDatabase('typeorm-cli-'));
  });
  afterAll(() => drop());

  test('when migration:show runs before and after db:migrate, then it lists every migration, pending then applied', async () => {
    // TypeORM numbers applied migrations only.
    const listed = (mark: string) => MIGRATIONS.map((migration, i) => (mark === 'X' ? `[X] ${i + 1} ${migration.name}` : `[ ] ${migration.name}`));
    const before = await typeorm('migration:show');
    expect(before.stdout.trim().split('\n').slice(-MIGRATIONS.length)).toEqual(listed(' '));
    expect((await runNode(built('src/cli/db.cli.js'), ['migrate'], { cwd, env })).code).toBe(0);
    const after = await typeorm('migration:show');
    expect(after).toMatchObject({ code: 0 });
    expect(after.stdout.trim().split('\n').slice(-MIGRATIONS.length)).toEqual(listed('X'));
  });
});
