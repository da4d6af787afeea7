import { createHash } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import Negotiator from 'negotiator';
import { rejectOtherMethods } from './method-not-allowed';
import { CLOSED_PAGE, contentSecurityPolicy } from './security-headers';
import { SURFACE_PATHS } from '../surface-paths';

interface Surface {
  readonly rel: string;
  readonly path: string;
  readonly title: string;
}

/** What `GET /` lists, in this order. Paths are origin-relative, so the page is right behind any proxy. */
export const SURFACES: readonly Surface[] = Object.freeze([
  {
    rel: 'graphql',
    path: SURFACE_PATHS.graphql,
    title: 'GraphQL endpoint (subscriptions: a WebSocket on the same path); in a browser, the GraphiQL playground',
  },
  { rel: 'rest', path: SURFACE_PATHS.pets, title: 'The REST contract /v1: list and create pets (an API key needed)' },
  { rel: 'docs', path: SURFACE_PATHS.docs, title: 'Swagger UI for the REST contract' },
  { rel: 'openapi', path: SURFACE_PATHS.openapiJson, title: 'The OpenAPI 3.1 document of the REST contract (/v1)' },
  { rel: 'health', path: SURFACE_PATHS.healthz, title: 'Liveness check' },
]);

const STYLE = 'body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 2rem auto; padding: 0 1rem; } code { font-size: 0.95em; }';

/** No script, and only this module's inline style, allowed by its hash, so nothing injected could run. */
export const LANDING_PAGE_CSP = contentSecurityPolicy({
  'default-src': ["'none'"],
  'style-src': [`'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`],
  'img-src': ["'self'", 'data:'],
  ...CLOSED_PAGE,
});

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pet Store gateway</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<h1>Pet Store gateway</h1>
<p>One pet store, served as GraphQL and as the REST contract <code>/v1</code>. Every API request needs
<code>Authorization: Bearer &lt;API key&gt;</code>; these pages do not.</p>
<ul>
${SURFACES.map(({ path, title }) => `<li><a href="${path}"><code>${path}</code></a>: ${title}</li>`).join('\n')}
</ul>
</body>
</html>
`;

function subscriptionsUrlOf(origin: string): string {
  return `${origin.replace(/^http/, 'ws')}${SURFACE_PATHS.graphql}`;
}

const LINKS = Object.fromEntries(SURFACES.map(({ rel, path }) => [rel, path]));

/**
 * `GET /`: where the surfaces are (docs/explorers.md), as HTML when the caller prefers it to
 * JSON (browsers), else JSON (a tie goes to JSON). Public: registered outside the guard.
 */
export const landingPageRoutes: FastifyPluginAsync = async (app) => {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    reply.header('Vary', 'Accept');
    const type = new Negotiator({ headers: { accept: request.headers.accept ?? '*/*' } }).mediaType(['application/json', 'text/html']);
    // The WebSocket URL is absolute (no relative ws: reference exists): this request's host and scheme, TRUST_PROXY applied.
    if (type !== 'text/html') {
      return { name: 'Pet Store gateway', links: { ...LINKS, subscriptions: subscriptionsUrlOf(`${request.protocol}://${request.host}`) } };
    }
    return reply
      .header('Content-Type', 'text/html; charset=utf-8')
      .header('Content-Security-Policy', LANDING_PAGE_CSP)
      .header('X-Frame-Options', 'DENY')
      .header('Referrer-Policy', 'no-referrer')
      .send(HTML);
  });
  rejectOtherMethods(app, '/', ['GET', 'HEAD']);
};

/** The origin a browser on this machine can open for a listener, e.g. `http://[::1]:3000`; a wildcard bind maps to loopback. */
export function originOf(host: string, port: number): string {
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`;
}

/** The start-up log line's absolute URLs of the surfaces, as `GET /` lists them (README "Two commands"). */
export function describeSurfaces(origin: string): string {
  const named = SURFACES.map(({ rel, path }) => `${rel} ${origin}${path}`);
  return `${origin}/ (${[...named, `subscriptions ${subscriptionsUrlOf(origin)}`].join(', ')})`;
}
