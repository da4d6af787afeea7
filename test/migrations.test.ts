import { buildApp } from '../src/app';
import { openDatabase } from '../src/database/open-database';
import { MIGRATIONS } from '../src/database/data-source';
import { TEST_DATABASE_URL, createTestDatabase } from './helpers/test-database';

// MySQL only: defined in the MariaDB run, which .ci/run always makes (SQLite has the embedded file lock).
const onMysql = TEST_DATABASE_URL ? test : () => undefined;

describe('migrations with several instances', () => {
  onMysql('when three instances open the same fresh database at once, then all start and each migration is applied once', async () => {
    const { database, drop } = await createTestDatabase();
    try {
      const instances = await Promise.all([openDatabase(database), openDatabase(database), openDatabase(database)]);
      try {
        const applied = await instances[0].query('SELECT name FROM migrations ORDER BY id');
        expect(applied.map((row: { name: string }) => row.name)).toEqual(MIGRATIONS.map((migration) => migration.name));
        for (const instance of instances) expect(await instance.showMigrations()).toBe(false);
      } finally {
        await Promise.all(instances.map((instance) => instance.destroy()));
      }
    } finally {
      await drop();
    }
  });
});

describe('DATABASE_MIGRATE_ON_START=false', () => {
  test('when the server starts without migrating, then /readyz says migrations are pending until they are applied', async () => {
    const { database, drop } = await createTestDatabase();
    const dataSource = await openDatabase(database, { migrate: false });
    const app = await buildApp({ config: { logLevel: 'silent' }, dataSource });
    try {
      const pending = await app.inject({ method: 'GET', url: '/readyz' });
      expect([pending.statusCode, pending.json()]).toEqual([503, { code: 'SERVICE_UNAVAILABLE', message: 'Database migrations are pending.', status: 503 }]);
      await dataSource.runMigrations();
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    } finally {
      await app.close();
      await dataSource.destroy();
      await drop();
    }
  });
});
