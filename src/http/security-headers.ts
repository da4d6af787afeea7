import fastifyCors, { type FastifyCorsOptions } from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import { SURFACE_PATHS } from '../surface-paths';

/** What every answer carries, Fastify's or written raw (raw-http-error.ts): no caching unless a route set its own, no sniffing. */
export const RESPONSE_HEADERS = Object.freeze({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' });

/** What the service's own pages close whatever else they allow: no base URL, no form target, no framing. */
export const CLOSED_PAGE = Object.freeze({ 'base-uri': ["'none'"], 'form-action': ["'none'"], 'frame-ancestors': ["'none'"] });

/** A page's Content-Security-Policy header value (CSP Level 3, docs/security.md "Response headers and CORS") from its directives, in order. */
export function contentSecurityPolicy(directives: Readonly<Record<string, readonly string[]>>): string {
  return Object.entries(directives)
    .map(([directive, sources]) => [directive, ...sources].join(' '))
    .join('; ');
}

/** Whether `url` (a request's path and query) is under the administration API, which CORS never grants. */
export function isAdminPath(url: string): boolean {
  return url === SURFACE_PATHS.admin || url.startsWith(`${SURFACE_PATHS.admin}/`) || url.startsWith(`${SURFACE_PATHS.admin}?`);
}

/**
 * No caching unless a route set its own, no sniffing, and CORS closed unless `corsOrigins`
 * (e.g. `https://app.example.com`) lists some (docs/security.md "Response headers and CORS"). The administration API
 * is never granted to another origin, whatever `corsOrigins` lists: its preflights get no grant, so a browser never
 * sends a key to it from a page (docs/admin.md).
 */
export async function hardenResponses(app: FastifyInstance, corsOrigins: readonly string[]): Promise<void> {
  // Hooks that do not wait take `done`: no promise per response.
  app.addHook('onSend', (_request, reply, _payload, done) => {
    if (!reply.hasHeader('cache-control')) reply.header('Cache-Control', RESPONSE_HEADERS['Cache-Control']);
    reply.header('X-Content-Type-Options', RESPONSE_HEADERS['X-Content-Type-Options']);
    done();
  });
  if (corsOrigins.length === 0) return;
  const granted: FastifyCorsOptions = {
    origin: [...corsOrigins],
    methods: ['GET', 'POST'],
    // The GraphQL CSRF headers too (graphql/csrf-prevention.ts), or CORS clients could not send them.
    allowedHeaders: ['Authorization', 'Content-Type', 'Idempotency-Key', 'If-None-Match', 'apollo-require-preflight', 'x-apollo-operation-name'],
    exposedHeaders: [
      'Location',
      'Idempotent-Replayed',
      'Deprecation',
      'Sunset',
      'Link',
      'ETag',
      'WWW-Authenticate',
      'RateLimit',
      'RateLimit-Policy',
      'Retry-After',
    ],
    maxAge: 600,
  };
  // Asked per request; what it answers replaces these options whole: the administration API gets no CORS field at all.
  await app.register(fastifyCors, {
    delegator: (request, callback) => callback(null, isAdminPath(request.url ?? '') ? { origin: false } : granted),
  });
}
