import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import Negotiator from 'negotiator';
import { rejectOtherMethods } from '../http/method-not-allowed';

/*
 * The GraphQL playground: GraphiQL 3 for people exploring `/graphql` in a browser, served
 * entirely by this process from the installed npm packages (no CDN, no font or image from
 * elsewhere). The page and its assets hold no data and need no API key; every GraphQL request
 * the page sends goes to `/graphql` like any other client's, through the auth hook, and its
 * subscriptions over a WebSocket on `/graphql` with the typed headers as `connection_init` payload.
 */

/** Where the playground's static files are served. */
export const PLAYGROUND_PREFIX = '/graphql/playground/';

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/** One year: asset URLs carry a hash of their content, so a changed file gets a new URL. */
const ASSET_CACHE_CONTROL = 'public, max-age=31536000, immutable';

/**
 * Only this origin, and no inline script or style: the bootstrap is the served
 * `playground.js`. GraphiQL's fonts are `data:` URLs inside its CSS.
 */
export const PLAYGROUND_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const DEFAULT_HEADERS = '{"Authorization": "Bearer <paste your API key>"}';

const DEFAULT_QUERY = `# Pet Store GraphQL playground
#
# Every request needs an API key: in the Headers
# tab below, replace <paste your API key> with
# yours (this browser remembers it). Then run the
# query with the play button (Ctrl-Enter), and
# reload the page for the Docs and autocompletion.
# Subscriptions run too, over a WebSocket:
#   subscription { petCreated { id name status } }

{
  pets(limit: 20) {
    id
    name
    categoryId
    status
  }
}
`;

// Runs in the browser, after React, ReactDOM, GraphiQL and graphql-ws have set their globals.
// Subscriptions go over a WebSocket on the same /graphql (README "Subscriptions"): each run gets a
// lazy graphql-ws client whose connection_init payload is the headers typed in the Headers tab,
// so the key there authenticates the socket as it does an HTTP request. Queries and mutations
// never open it (the client connects on its first subscription only).
const BOOTSTRAP = `(function () {
  'use strict';
  var wsUrl = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/graphql';
  function fetcher(params, options) {
    var headers = (options && options.headers) || {};
    var wsClient = graphqlWs.createClient({ url: wsUrl, connectionParams: headers, retryAttempts: 0 });
    return GraphiQL.createFetcher({ url: '/graphql', wsClient: wsClient })(params, options);
  }
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      defaultQuery: ${JSON.stringify(DEFAULT_QUERY)},
      defaultHeaders: ${JSON.stringify(DEFAULT_HEADERS)},
      isHeadersEditorEnabled: true,
      defaultEditorToolsVisibility: 'headers',
      shouldPersistHeaders: true
    })
  );
})();
`;

const LAYOUT = `html, body { height: 100%; margin: 0; }
#graphiql { height: 100vh; }
`;

interface Asset {
  contentType: string;
  body: Buffer;
  /** Short hash of `body`, put in the page's URL of the asset to bust caches on change. */
  version: string;
}

/** A file of an installed package, found from wherever this module runs (src/ or dist/). */
function packageFile(packageName: string, file: string): string {
  return path.join(path.dirname(require.resolve(`${packageName}/package.json`)), file);
}

function asset(contentType: string, body: Buffer | string): Asset {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return { contentType, body: bytes, version: createHash('sha256').update(bytes).digest('hex').slice(0, 12) };
}

/** Reads every asset once; throws (stopping the start) when a package file is missing. */
function loadAssets(): Map<string, Asset> {
  const read = (packageName: string, file: string) => readFileSync(packageFile(packageName, file));
  return new Map([
    ['react.production.min.js', asset(JS, read('react', 'umd/react.production.min.js'))],
    ['react-dom.production.min.js', asset(JS, read('react-dom', 'umd/react-dom.production.min.js'))],
    ['graphiql.min.js', asset(JS, read('graphiql', 'graphiql.min.js'))],
    ['graphiql.min.css', asset(CSS, read('graphiql', 'graphiql.min.css'))],
    ['graphql-ws.js', asset(JS, read('graphql-ws', 'umd/graphql-ws.js'))],
    ['playground.css', asset(CSS, LAYOUT)],
    ['playground.js', asset(JS, BOOTSTRAP)],
  ]);
}

function renderPage(assets: Map<string, Asset>): string {
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
<div id="graphiql">Loading the GraphQL playground…</div>
<noscript>The GraphQL playground needs JavaScript. Without it, send GraphQL requests to /graphql with any HTTP client.</noscript>
${scripts.map((name) => `<script src="${href(name)}"></script>`).join('\n')}
</body>
</html>
`;
}

/** What GraphQL clients ask for, before text/html: on a tie (a bare wildcard Accept), the API wins. */
const NEGOTIABLE_TYPES = ['application/graphql-response+json', 'application/json', 'multipart/mixed', 'text/html'];

/**
 * Content negotiation for `GET /graphql` (RFC 9110 §12.5.1, by the `negotiator` package):
 * whether the caller prefers an HTML page to a GraphQL JSON response. Ranked by quality, then
 * the specificity of the matching range, then its position in the header; a tie goes to the
 * API, so a bare wildcard Accept (curl, fetch) and a missing header keep getting JSON.
 *
 * @param accept - the request's `Accept` header, if any.
 * @returns true when `text/html` strictly beats every GraphQL response type; never throws.
 */
export function prefersHtml(accept: string | undefined): boolean {
  return accept !== undefined && new Negotiator({ headers: { accept } }).mediaType(NEGOTIABLE_TYPES) === 'text/html';
}

/** A GET or HEAD without a `query` parameter: the answer depends on `Accept` (page or API). */
function isNegotiable(request: FastifyRequest): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const query = request.query as Record<string, unknown> | undefined;
  return !(query && Object.hasOwn(query, 'query'));
}

/**
 * Sets up the GraphQL playground (GraphiQL) in a Fastify scope: reads its files once, now,
 * from the installed `react`, `react-dom` and `graphiql` packages, and serves them with
 * `GET /graphql/playground/<name>` (long-lived `Cache-Control`, no API key; other methods
 * 405, errors rendered by the app's error handler, in the REST Error shape).
 *
 * @param app - the scope that also serves `/graphql`.
 * @returns the `onRequest` hook `servePlaygroundToBrowsers`, to put on the `/graphql` route
 *   BEFORE the auth hook: for a GET or HEAD whose `Accept` prefers `text/html` and that has no
 *   `query` parameter it answers the playground page (200, `text/html`, a strict
 *   Content-Security-Policy, no API key needed) and ends the request; for anything else it
 *   does nothing, so the request goes on to authentication and Apollo as before.
 * @throws when a package file cannot be found or read (a broken install): the app does not start.
 */
export async function registerPlayground(app: FastifyInstance): Promise<onRequestAsyncHookHandler> {
  const assets = loadAssets();
  const page = renderPage(assets);

  await app.register(async (scope) => {
    for (const [name, { contentType, body }] of assets) {
      const url = PLAYGROUND_PREFIX + name;
      // Hidden from the OpenAPI document: these are files, not API operations.
      scope.get(url, { schema: { hide: true } }, async (_request, reply) =>
        reply.header('Content-Type', contentType).header('Cache-Control', ASSET_CACHE_CONTROL).send(body),
      );
      rejectOtherMethods(scope, url, ['GET', 'HEAD']);
    }
  });

  return async function servePlaygroundToBrowsers(request: FastifyRequest, reply: FastifyReply) {
    if (!isNegotiable(request)) return;
    // Page or API answer, this URL's response depends on Accept: tell caches.
    reply.header('Vary', 'Accept');
    if (!prefersHtml(request.headers.accept)) return;
    return reply
      .code(200)
      .header('Content-Type', 'text/html; charset=utf-8')
      .header('Cache-Control', 'no-cache')
      .header('Content-Security-Policy', PLAYGROUND_CSP)
      .header('X-Frame-Options', 'DENY')
      .header('Referrer-Policy', 'no-referrer')
      .send(page);
  };
}
