import fastify from 'fastify';
import mercurius from 'mercurius';
import { PET_TYPE_DEFS, petResolvers } from './peer-sdl.schema';
import { isActiveKey, openPool } from './pet-mysql.queries';
import { UNAUTHENTICATED_GRAPHQL_BODY, bearerKeyCheck, exitOnSigterm, fail } from './standalone-server';

/**
 * GraphQL peer "mercurius-jit": mercurius on Fastify with `jit: 1` (a query compiled by
 * graphql-jit from its first use on), the schema in SDL with resolvers over raw mysql2
 * (peer-sdl.schema.ts), the key check of B1c (standalone-server.ts) in an `onRequest` hook
 * answering 401. Mercurius's defaults stay: its query cache (LRU of 1,024).
 *
 * Skips what the service does beyond that: rate limits, input validation beyond GraphQL's
 * types, cost and depth limits, request logs and metrics, idempotency keys, the create's
 * transaction, security headers.
 *
 * Environment: PORT; DATABASE_URL (mysql://…); POOL_SIZE (default 10); KEY_CACHE_MS and
 * KEY_CACHE_MAX as B1c (the bench passes the service's `API_KEY_CACHE`).
 */
const pool = openPool();
const isAuthorized = bearerKeyCheck((hash) => isActiveKey(pool, hash));

const app = fastify({ logger: false });
app.addHook('onRequest', async (request, reply) => {
  if (!(await isAuthorized(request.headers.authorization))) {
    return reply.code(401).header('www-authenticate', 'Bearer').type('application/json').send(UNAUTHENTICATED_GRAPHQL_BODY);
  }
});
void app.register(mercurius, { schema: PET_TYPE_DEFS, resolvers: petResolvers(pool), jit: 1 });

app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' }).catch(fail);
exitOnSigterm(() => app.close().then(() => pool.end()));
