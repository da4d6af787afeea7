import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify';
import Negotiator from 'negotiator';
import { rejectOtherMethods } from '../http/method-not-allowed';
import { CLOSED_PAGE, contentSecurityPolicy } from '../http/security-headers';
import { SURFACE_PATHS } from '../surface-paths';

// GraphiQL, served from the installed packages (no CDN). The page holds no data and needs no
// API key; the requests it sends go through the guard like any client's.

export const PLAYGROUND_PREFIX = `${SURFACE_PATHS.graphql}/playground/`;

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** One year: asset URLs carry a hash of their content, so a changed file gets a new URL. */
const ASSET_CACHE_CONTROL = 'public, max-age=31536000, immutable';

/** No inline script or style: the bootstrap is the served `playground.js`. GraphiQL's fonts are `data:` URLs in its CSS. */
export const PLAYGROUND_CSP = contentSecurityPolicy({
  'default-src': ["'none'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'font-src': ["'self'", 'data:'],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  ...CLOSED_PAGE,
});

interface Asset {
  contentType: string;
  body: Buffer;
  /** Put in the asset's URL to bust caches on change. */
  version: string;
}

function packageFile(packageName: string, file: string): string {
  return path.join(path.dirname(require.resolve(`${packageName}/package.json`)), file);
}

function asset(contentType: string, body: Buffer | string): Asset {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return { contentType, body: bytes, version: createHash('sha256').update(bytes).digest('hex').slice(0, 12) };
}

/** The folder of the playground's own script and style: src/graphql/playground/ of the project, from src/ or from dist/. */
function ownAssetsFolder(): string {
  let root = __dirname;
  while (!existsSync(path.join(root, 'package.json'))) root = path.dirname(root);
  return path.join(root, 'src', 'graphql', 'playground');
}

function loadAssets(): Map<string, Asset> {
  const read = (packageName: string, file: string) => readFileSync(packageFile(packageName, file));
  const own = (file: string) => readFileSync(path.join(ownAssetsFolder(), file));
  return new Map([
    ['react.production.min.js', asset(JS, read('react', 'umd/react.production.min.js'))],
    ['react-dom.production.min.js', asset(JS, read('react-dom', 'umd/react-dom.production.min.js'))],
    ['graphiql.min.js', asset(JS, read('graphiql', 'graphiql.min.js'))],
    ['graphiql.min.css', asset(CSS, read('graphiql', 'graphiql.min.css'))],
    ['graphql-ws.js', asset(JS, read('graphql-ws', 'umd/graphql-ws.js'))],
    ['playground.css', asset(CSS, own('playground.css'))],
    ['playground.js', asset(JS, own('playground.js'))],
  ]);
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function renderPage(assets: Map<string, Asset>, keyCommand: string): string {
  const href = (name: string) => `${PLAYGROUND_PREFIX}${name}?v=${assets.get(name)!.version}`;
  const scripts = ['react.production.min.js', 'react-dom.production.min.js', 'graphiql.min.js', 'graphql-ws.js', 'playground.js'];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Pet Store GraphQL playground</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${href('graphiql.min.css')}">
<link rel="stylesheet" href="${href('playground.css')}">
</head>
<body>
<form id="key-form" class="key-bar" autocomplete="off" data-key-command="${escapeHtml(keyCommand)}" data-graphql-path="${SURFACE_PATHS.graphql}">
<label for="key-input">API key</label>
<input id="key-input" type="password" spellcheck="false" placeholder="pst_…">
<button type="submit">Use this key</button>
<span id="key-status" role="status">Kept in this browser tab only (sessionStorage), never in localStorage. No key yet? <code>${escapeHtml(keyCommand)}</code></span>
</form>
<div id="key-in-use" class="key-bar" hidden>Your API key is in GraphiQL's Headers tab, kept in this browser tab only. <button id="key-forget" type="button">Forget it</button></div>
<div id="graphiql"><p>Enter an API key above to start: the schema, the Docs and every query need one.</p></div>
<noscript>The GraphQL playground needs JavaScript. Without it, send GraphQL requests to ${SURFACE_PATHS.graphql} with any HTTP client.</noscript>
${scripts.map((name) => `<script src="${href(name)}"></script>`).join('\n')}
</body>
</html>
`;
}

/** What GraphQL clients ask for, before text/html: on a tie (a bare wildcard Accept), the API wins. */
const NEGOTIABLE_TYPES = ['application/graphql-response+json', 'application/json', 'multipart/mixed', 'text/html'];

/** Whether `Accept` strictly prefers `text/html` to every GraphQL response type (RFC 9110 §12.5.1). */
export function prefersHtml(accept: string | undefined): boolean {
  return accept !== undefined && new Negotiator({ headers: { accept } }).mediaType(NEGOTIABLE_TYPES) === 'text/html';
}

function isNegotiable(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const query = request.query as Record<string, unknown> | undefined;
  return !(query && Object.hasOwn(query, 'query'));
}

/**
 * Serves the playground's assets under {@link PLAYGROUND_PREFIX}; `keyCommand` is the shell
 * command shown for getting a key. Returns an `onRequest` hook for `/graphql` that must run
 * BEFORE the guard: it answers browsers the page and lets anything else through.
 * @throws when a package file is missing (a broken install), so the app does not start.
 */
export async function registerPlayground(app: FastifyInstance, keyCommand: string): Promise<onRequestHookHandler> {
  const assets = loadAssets();
  const page = renderPage(assets, keyCommand);

  await app.register(async (scope) => {
    for (const [name, { contentType, body }] of assets) {
      const url = PLAYGROUND_PREFIX + name;
      scope.get(url, { schema: { hide: true } }, async (_request, reply) =>
        reply.header('Content-Type', contentType).header('Cache-Control', ASSET_CACHE_CONTROL).send(body),
      );
      rejectOtherMethods(scope, url, ['GET', 'HEAD']);
    }
  });

  // Takes `done` (no promise per request); answering the page, it does not call it.
  const servePlaygroundToBrowsers: onRequestHookHandler = (request, reply, done) => {
    if (!isNegotiable(request)) return done();
    // Page or API answer, this URL's response depends on Accept: tell caches.
    reply.header('Vary', 'Accept');
    if (!prefersHtml(request.headers.accept)) return done();
    reply
      .code(200)
      .header('Content-Type', 'text/html; charset=utf-8')
      .header('Cache-Control', 'no-cache')
      .header('Content-Security-Policy', PLAYGROUND_CSP)
      .header('X-Frame-Options', 'DENY')
      .header('Referrer-Policy', 'no-referrer')
      .send(page);
  };
  return servePlaygroundToBrowsers;
}
