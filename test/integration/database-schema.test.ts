import type { DataSource } from 'typeorm';
import { openTestDatabase, testOnMysql } from '../helpers/test-database';

describe('the migrated database', () => {
  let dataSource: DataSource;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ dataSource, close } = await openTestDatabase());
  });
  afterAll(() => close());

  test('when listPets filters by status, then the query plan uses idx_pet_status_id', async () => {
    const sql = "SELECT id, name, category_id, status FROM pet WHERE status = 'sold' ORDER BY id LIMIT 20";
    const plan = await dataSource.query(`${dataSource.options.type === 'mysql' ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'} ${sql}`);
    expect(JSON.stringify(plan)).toContain('idx_pet_status_id');
  });

  test('when the migrations have run twice, then the second run has nothing to do', async () => {
    expect(await dataSource.runMigrations()).toEqual([]);
  });

  // On SQLite the tables differ from the entities on purpose (INTEGER PRIMARY KEY is what
  // AUTOINCREMENT needs, where the entities say BIGINT), so the comparison is MySQL's.
  testOnMysql('when the entities are compared with the migrated MySQL schema, then TypeORM would change nothing that matters', async () => {
    expect(dataSource.options.type).toBe('mysql');
    const { upQueries } = await dataSource.driver.createSchemaBuilder().log();
    // MariaDB reports a nullable column's default as the text 'NULL', so TypeORM proposes to
    // re-declare every nullable column exactly as it is, dropping an index over it before and creating it again, the same,
    // after; nothing else may differ.
    const queries = upQueries.map((q) => q.query);
    const known = /^ALTER TABLE `\w+` CHANGE `(\w+)` `\1` [\w()]+ NULL$/;
    const redeclared = new Set(queries.flatMap((query) => known.exec(query)?.[1] ?? []));
    const rebuilt = new Set(
      queries.flatMap((query) => {
        const [, index, table, columns] = /^CREATE INDEX `(\w+)` ON `(\w+)` \(([^)]*)\)$/.exec(query) ?? [];
        const drop = `DROP INDEX \`${index}\` ON \`${table}\``;
        const overRedeclared = columns?.split(', ').some((column) => redeclared.has(column.replaceAll('`', '')));
        return overRedeclared && queries.includes(drop) ? [drop, query] : [];
      }),
    );
    expect(queries.filter((query) => !known.test(query) && !rebuilt.has(query))).toEqual([]);
  });
});
