import fastifyCors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';

/**
 * No caching unless a route set its own, no sniffing, and CORS closed unless `corsOrigins`
 * (e.g. `https://app.example.com`) lists some (docs/security.md "Response headers and CORS").
 */
export async function hardenResponses(app: FastifyInstance, corsOrigins: readonly string[]): Promise<void> {
  // Hooks that do not wait take `done`: no promise per response.
  app.addHook('onSend', (_request, reply, _payload, done) => {
    if (!reply.hasHeader('cache-control')) reply.header('Cache-Control', 'no-store');
    reply.header('X-Content-Type-Options', 'nosniff');
    done();
  });
  if (corsOrigins.length === 0) return;
  await app.register(fastifyCors, {
    origin: [...corsOrigins],
    methods: ['GET', 'POST'],
    // The GraphQL CSRF headers too (graphql/csrf-prevention.ts), or CORS clients could not send them.
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'apollo-require-preflight', 'x-apollo-operation-name'],
    exposedHeaders: ['Location', 'Idempotent-Replayed', 'Deprecation', 'Sunset', 'Link', 'WWW-Authenticate', 'RateLimit', 'RateLimit-Policy', 'Retry-After'],
    maxAge: 600,
  });
}
