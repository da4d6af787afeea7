import fastifyCors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/**
 * Response hardening for every route (docs/security.md "Response headers and CORS"): API answers are never cached
 * (`Cache-Control: no-store`, unless a route set its own caching, as static assets do) and
 * never sniffed (`X-Content-Type-Options: nosniff`). CORS is closed unless `corsOrigins`
 * names the browser origins allowed to call the API; a listed origin may send the request headers
 * the API reads (`Authorization`, `Content-Type`, `Idempotency-Key`) and those GraphQL's CSRF
 * prevention accepts as proof of a preflight (docs/security.md "CSRF").
 *
 * @param corsOrigins - allowed origins such as `https://app.example.com`; none closes CORS.
 */
export async function hardenResponses(app: FastifyInstance, corsOrigins: readonly string[]): Promise<void> {
  app.addHook('onSend', async (_request, reply) => {
    if (!reply.hasHeader('cache-control')) reply.header('Cache-Control', 'no-store');
    reply.header('X-Content-Type-Options', 'nosniff');
  });
  if (corsOrigins.length === 0) return;
  await app.register(fastifyCors, {
    origin: [...corsOrigins],
    methods: ['GET', 'POST'],
    // Every header a client may need to send, the GraphQL CSRF headers included (graphql/csrf-prevention.ts).
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'apollo-require-preflight', 'x-apollo-operation-name'],
    exposedHeaders: ['Location', 'Idempotent-Replayed', 'Deprecation', 'Sunset', 'Link', 'WWW-Authenticate', 'RateLimit', 'RateLimit-Policy', 'Retry-After'],
    maxAge: 600,
  });
}
