import { type Pool, type ResultSetHeader, type RowDataPacket, createPool } from 'mysql2/promise';
import { ACTIVE_KEY_SQL } from './standalone-server';

/**
 * The raw `mysql2` queries of B1, B1c and the SDL peers (`pool.execute`, server-side prepared
 * statements): the service's SQL, written by hand.
 */

/** A pet as both surfaces answer it. */
export interface PetJson {
  id: number;
  name: string;
  categoryId: number;
  status: string;
}

/** The statuses a pet may have. */
export const STATUSES = new Set(['available', 'pending', 'sold']);

const COLUMNS = 'SELECT id, name, category_id, status FROM pet';
type Row = RowDataPacket & { id: string; name: string; category_id: string; status: string };
const toPet = (row: Row): PetJson => ({ id: Number(row.id), name: row.name, categoryId: Number(row.category_id), status: row.status });

/** A pool on DATABASE_URL (mysql://…) of POOL_SIZE connections (default 10, as the service). */
export function openPool(): Pool {
  return createPool({
    uri: process.env.DATABASE_URL,
    connectionLimit: Number(process.env.POOL_SIZE ?? 10),
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
}

/** @returns whether the key of this SHA-256 hash is active: one indexed SELECT. */
export async function isActiveKey(pool: Pool, hash: string): Promise<boolean> {
  const [rows] = await pool.execute<RowDataPacket[]>(ACTIVE_KEY_SQL, [hash]);
  return rows.length > 0;
}

/** The first `limit` pets in id order, of one status if given. */
export async function listPets(pool: Pool, limit: number, status?: string): Promise<PetJson[]> {
  const [rows] = status
    ? await pool.execute<Row[]>(`${COLUMNS} WHERE status = ? ORDER BY id LIMIT ?`, [status, String(limit)])
    : await pool.execute<Row[]>(`${COLUMNS} ORDER BY id LIMIT ?`, [String(limit)]);
  return rows.map(toPet);
}

/** @returns the pet of this id, or undefined. */
export async function getPet(pool: Pool, id: string): Promise<PetJson | undefined> {
  const [rows] = await pool.execute<Row[]>(`${COLUMNS} WHERE id = ?`, [id]);
  return rows.length ? toPet(rows[0]) : undefined;
}

/** Inserts a pet (one INSERT, no transaction) and returns it with its id. */
export async function insertPet(pool: Pool, pet: Omit<PetJson, 'id'>): Promise<PetJson> {
  const [result] = await pool.execute<ResultSetHeader>('INSERT INTO pet (name, category_id, status) VALUES (?, ?, ?)', [pet.name, pet.categoryId, pet.status]);
  return { id: Number(result.insertId), ...pet };
}
