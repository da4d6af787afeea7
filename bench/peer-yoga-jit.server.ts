import { createServer } from 'node:http';
import { useGraphQlJit } from '@envelop/graphql-jit';
import { type Plugin, createSchema, createYoga } from 'graphql-yoga';
import { PET_TYPE_DEFS, petResolvers } from './peer-sdl.schema';
import { isActiveKey, openPool } from './pet-mysql.queries';
import { UNAUTHENTICATED_GRAPHQL_BODY, bearerKeyCheck, exitOnSigterm } from './standalone-server';

/**
 * GraphQL peer "yoga-jit": graphql-yoga on `node:http`, as its getting-started writes it, with
 * `@envelop/graphql-jit`; the schema in SDL with resolvers over raw mysql2 (peer-sdl.schema.ts),
 * the key check of B1c (standalone-server.ts) in an `onRequest` plugin answering 401.
 * Yoga's defaults stay: its parse and validation caches, masked errors, GraphiQL on GET.
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

const useBearerKey: Plugin = {
  async onRequest(event) {
    if (await isAuthorized(event.request.headers.get('authorization') ?? undefined)) return;
    const headers = { 'content-type': 'application/json', 'www-authenticate': 'Bearer' };
    event.endResponse(new event.fetchAPI.Response(UNAUTHENTICATED_GRAPHQL_BODY, { status: 401, headers }));
  },
};

const yoga = createYoga({
  schema: createSchema({ typeDefs: PET_TYPE_DEFS, resolvers: petResolvers(pool) }),
  plugins: [useBearerKey, useGraphQlJit()],
});
const server = createServer(yoga.requestListener);
server.listen(Number(process.env.PORT), '127.0.0.1');
exitOnSigterm(() => new Promise<void>((resolve) => server.close(() => resolve())).then(() => pool.end()));
