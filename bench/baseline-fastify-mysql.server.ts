import fastify from 'fastify';
import { STATUSES, getPet, insertPet, isActiveKey, listPets, openPool } from './pet-mysql.queries';
import { bearerKeyCheck, exitOnSigterm, fail } from './standalone-server';

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
const pool = openPool();
const isAuthorized = bearerKeyCheck((hash) => isActiveKey(pool, hash));
const error = (status: number, code: string) => ({ code, message: code, status });

const app = fastify({ logger: false });
app.addHook('onRequest', async (request, reply) => {
  if (!(await isAuthorized(request.headers.authorization))) return reply.code(401).header('www-authenticate', 'Bearer').send(error(401, 'UNAUTHENTICATED'));
});
app.get<{ Querystring: { limit?: string; status?: string } }>('/v1/pets', async (request, reply) => {
  const { limit = '20', status } = request.query;
  const n = Number(limit);
  if (!Number.isInteger(n) || n < 1 || n > 100 || (status !== undefined && !STATUSES.has(status))) return reply.code(400).send(error(400, 'BAD_USER_INPUT'));
  return listPets(pool, n, status);
});
app.get<{ Params: { id: string } }>('/v1/pets/:id', async (request, reply) => {
  return (await getPet(pool, request.params.id)) ?? reply.code(404).send(error(404, 'NOT_FOUND'));
});
app.post<{ Body: { name?: unknown; categoryId?: unknown; status?: string } }>('/v1/pets', async (request, reply) => {
  const { name, categoryId, status = 'available' } = request.body ?? {};
  if (typeof name !== 'string' || !Number.isSafeInteger(categoryId) || !STATUSES.has(status)) return reply.code(400).send(error(400, 'BAD_USER_INPUT'));
  const pet = await insertPet(pool, { name, categoryId: categoryId as number, status });
  return reply.code(201).header('location', `/v1/pets/${pet.id}`).send(pet);
});

app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' }).catch(fail);
exitOnSigterm(() => app.close().then(() => pool.end()));
