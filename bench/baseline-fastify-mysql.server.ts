import { createHash } from 'node:crypto';
import fastify from 'fastify';
import { type ResultSetHeader, type RowDataPacket, createPool } from 'mysql2/promise';

/**
 * Baseline B1: Fastify and raw `mysql2` (`pool.execute`, server-side prepared statements)
 * doing what the service does for REST, with the same SQL and the same per-request API key
 * lookup (SHA-256 of the bearer token, then one indexed SELECT), but no ORM, no GraphQL, no
 * validation library, no rate limiter and no security headers.
 *
 * Environment: PORT; DATABASE_URL (mysql://…); POOL_SIZE (default 10, as the service).
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

const app = fastify({ logger: false });
app.addHook('onRequest', async (request, reply) => {
  const key = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
  const hash = key && createHash('sha256').update(key).digest('hex');
  const [rows] = hash ? await pool.execute<RowDataPacket[]>('SELECT id FROM api_key WHERE key_hash = ? AND revoked_at IS NULL', [hash]) : [[]];
  if (rows.length === 0) return reply.code(401).header('www-authenticate', 'Bearer').send(error(401, 'UNAUTHENTICATED'));
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
