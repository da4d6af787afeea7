import { type RowDataPacket, createConnection } from 'mysql2/promise';
import { ApiKey } from '../src/auth/api-key.entity';
import { ApiKeyService } from '../src/auth/api-key.service';
import { createDatabase } from '../src/database/mysql-admin';
import { openDatabase } from '../src/database/open-database';
import { PetRepository } from '../src/pets/pet.repository';
import { seedPets } from '../src/pets/pet.seed';

/**
 * Drops and recreates the database of `url` ({@link createDatabase}), runs the migrations, seeds
 * `petCount` pets with {@link seedPets} and creates one API key through ApiKeyService.
 *
 * @returns the API key (ids 1 to `petCount` are the seeded pets).
 */
export async function prepareDatabase(url: string, petCount: number): Promise<string> {
  await createDatabase(url, { replace: true });
  const dataSource = await openDatabase({ type: 'mysql', url });
  try {
    await seedPets(dataSource, petCount);
    return (await new ApiKeyService(dataSource.getRepository(ApiKey)).create('benchmark')).key;
  } finally {
    await dataSource.destroy();
  }
}

/**
 * Grows `pet` to `target` rows by copying existing rows (`INSERT … SELECT`, doubling at most),
 * then refreshes the index statistics. Expects ids 1 to n with no gaps (a freshly seeded table).
 *
 * @returns the row count reached.
 */
export async function growPets(url: string, target: number): Promise<number> {
  const connection = await createConnection(url);
  try {
    const count = async () => {
      const [rows] = await connection.query<(RowDataPacket & { n: number | string })[]>('SELECT COUNT(*) AS n FROM pet');
      return Number(rows[0].n);
    };
    // Explicit ids keep them contiguous (1 to `target`), so a random get always finds its pet;
    // AUTO_INCREMENT alone leaves gaps after INSERT … SELECT.
    for (let rows = await count(); rows < target; rows = await count()) {
      const batch = Math.min(rows, target - rows);
      await connection.query(`INSERT INTO pet (id, name, category_id, status) SELECT id + ${rows}, name, category_id, status FROM pet WHERE id <= ${batch}`);
    }
    await connection.query('ANALYZE TABLE pet');
    return count();
  } finally {
    await connection.end();
  }
}

/** One row of MySQL's EXPLAIN, as reported. */
export interface ExplainRow {
  type: string;
  key: string | null;
  rows: number;
  Extra: string | null;
}

/**
 * EXPLAINs the statements the service runs for list and get: PetRepository's own SQL, with
 * parameters bound as the service binds them.
 *
 * @returns each statement's plan, keyed by a short label.
 */
export async function explainQueries(url: string): Promise<Record<string, ExplainRow>> {
  const dataSource = await openDatabase({ type: 'mysql', url });
  try {
    const { sql } = new PetRepository(dataSource);
    const statements: Array<[string, string, unknown[]]> = [
      ['list limit=20', sql.list, [0, 20]],
      ['list status=sold limit=20', sql.listByStatus, ['sold', 0, 20]],
      ['get by id', sql.byId, [5000]],
    ];
    const plans: Record<string, ExplainRow> = {};
    for (const [label, statement, parameters] of statements) {
      const [{ type, key, rows, Extra }] = await dataSource.query<ExplainRow[]>(`EXPLAIN ${statement}`, parameters);
      plans[label] = { type, key, rows: Number(rows), Extra };
    }
    return plans;
  } finally {
    await dataSource.destroy();
  }
}

/** @returns the server's version string, e.g. `10.11.19-MariaDB-…`. */
export async function databaseVersion(url: string): Promise<string> {
  const connection = await createConnection(url);
  try {
    const [rows] = await connection.query<(RowDataPacket & { v: string })[]>('SELECT VERSION() AS v');
    return rows[0].v;
  } finally {
    await connection.end();
  }
}
