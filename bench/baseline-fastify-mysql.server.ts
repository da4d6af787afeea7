import { createHash } from 'node:crypto';
import fastify from 'fastify';
import { LRUCache } from 'lru-cache';
import { type ResultSetHeader, type RowDataPacket, createPool } from 'mysql2/promise';

/**
 * Baseline B1: Fastify and raw `mysql2` (`pool.execute`, server-side prepared statements)
 * doing what the service does for REST, with the same SQL and the same per-request API key
 * lookup (SHA-256 of the bearer token, then one indexed SELECT), but no ORM, no GraphQL, no
 * validation library, no rate limiter and no security headers.
 *
 * Baseline B1c is the same script with KEY_CACHE_MS set: each lookup's answer (active, or
 * unknown/revoked) is reused for that many milliseconds, in an LRU of at most KEY_CACHE_MAX
 * keys, as the service's key cache does (`API_KEY_CACHE` in src/limits.ts).
 *
 * Environment: PORT; DATABASE_URL (mysql://…); POOL_SIZE (default 10, as the service);
 * KEY_CACHE_MS (default 0: no cache, B1); KEY_CACHE_MAX (default 10,000).
 */
const pool = createPool({
  uri: process.env.DATABASE_URL,
  connectionLimit: Number(process.env.POOL_SIZE ?? 10),
  supportBigNumbers: true,
  bigNumberStrings: true,
});
const COLUMNS = 'SELECT id, name, category_id, status FROM pet';
const STATUSES = new Set(['available', 'pending', 'sold']);
type Row = RowDataPacket & { id: string; name: string; category_id: string; status: string };
const toPet = (row: Row) => ({ id: Number(row.id), name: row.name, categoryId: Number(row.category_id), status: row.status });
const error = (status: number, code: string) => ({ code, message: code, status });

const KEY_CACHE_MS = Number(process.env.KEY_CACHE_MS ?? 0);
const keyCache = KEY_CACHE_MS > 0 ? new LRUCache<string, boolean>({ max: Number(process.env.KEY_CACHE_MAX ?? 10_000), ttl: KEY_CACHE_MS }) : undefined;

/** Whether the key of this SHA-256 hash is active: from the cache (B1c) or one indexed SELECT. */
async function isActive(hash: string): Promise<boolean> {
  const cached = keyCache?.get(hash);
  if (cached !== undefined) return cached;
  const [rows] = await pool.execute<RowDataPacket[]>('SELECT id FROM api_key WHERE key_hash = ? AND revoked_at IS NULL', [hash]);
  keyCache?.set(hash, rows.length > 0);
  return rows.length > 0;
}

const app = fastify({ logger: false });
app.addHook('onRequest', async (request, reply) => {
  const key = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
  const hash = key && createHash('sha256').update(key).digest('hex');
  if (!hash || !(await isActive(hash))) return reply.code(401).header('www-authenticate', 'Bearer').send(error(401, 'UNAUTHENTICATED'));
});
app.get<{ Querystring: { limit?: string; status?: string } }>('/v1/pets', async (request, reply) => {
  const { limit = '20', status } = request.query;
  const n = Number(limit);
  if (!Number.isInteger(n) || n < 1 || n > 100 || (status !== undefined && !STATUSES.has(status))) return reply.code(400).send(error(400, 'BAD_USER_INPUT'));
  const [rows] = status
    ? await pool.execute<Row[]>(`${COLUMNS} WHERE status = ? ORDER BY id LIMIT ?`, [status, limit])
    : await pool.execute<Row[]>(`${COLUMNS} ORDER BY id LIMIT ?`, [limit]);
  return rows.map(toPet);
});
app.get<{ Params: { id: string } }>('/v1/pets/:id', async (request, reply) => {
  const [rows] = await pool.execute<Row[]>(`${COLUMNS} WHERE id = ?`, [request.params.id]);
  return rows.length ? toPet(rows[0]) : reply.code(404).send(error(404, 'NOT_FOUND'));
});
app.post<{ Body: { name?: unknown; categoryId?: unknown; status?: string } }>('/v1/pets', async (request, reply) => {
  const { name, categoryId, status = 'available' } = request.body ?? {};
  if (typeof name !== 'string' || !Number.isSafeInteger(categoryId) || !STATUSES.has(status)) return reply.code(400).send(error(400, 'BAD_USER_INPUT'));
  const [result] = await pool.execute<ResultSetHeader>('INSERT INTO pet (name, category_id, status) VALUES (?, ?, ?)', [name, categoryId as number, status]);
  const id = Number(result.insertId);
  return reply.code(201).header('location', `/v1/pets/${id}`).send({ id, name, categoryId, status });
});

/** Ends the process with the error, as an unhandled rejection would, but on purpose. */
function fail(reason: unknown): never {
  console.error(reason);
  process.exit(1);
}

app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' }).catch(fail);
process.once('SIGTERM', () => {
  app
    .close()
    .then(() => pool.end())
    .then(() => process.exit(0), fail);
});
