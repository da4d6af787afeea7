import etag from 'etag';
import type { FastifyInstance } from 'fastify';
import fresh from 'fresh';

/**
 * The caching of an opted-in route's 200 and 304. `private`: each is the answer to one key, so no shared cache keeps
 * it. `no-cache` rather than `no-store`: a browser may keep the page, but must revalidate it before each use, so every
 * use passes the guard again (a revoked key gets its 401, not a kept page) and an unchanged page costs a free 304. The
 * body depends on the URL alone, never on the key, and every use is revalidated: so no `Vary: Authorization`.
 */
export const CONDITIONAL_CACHE_CONTROL = 'private, no-cache';

/**
 * The strong entity tag (RFC 9110 §8.8.3) of an answer: a hash of its exact body bytes and, when it has one, its `Link`
 * field. The `Link` counts because a full last page keeps its body when a pet is created after it, and gains only a
 * `rel="next"`: a client polling that page must see the change.
 * @param payload - the serialised body, as sent.
 * @param link - the answer's `Link` field value, if any.
 * @returns quoted, as the field carries it: `"3-zQ1MwyNGdQQI99T1547JpuW3mg0"` for an empty page (`[]` and its newline).
 */
export function entityTagOf(payload: string | Buffer, link: string | undefined): string {
  if (link === undefined) return etag(payload);
  // The same bytes either way: a string is hashed as its UTF-8, with no copy into a Buffer.
  return etag(typeof payload === 'string' ? `${link}\n${payload}` : Buffer.concat([Buffer.from(`${link}\n`), payload]));
}

/**
 * Conditional GET and HEAD (RFC 9110 §13.1.2 If-None-Match, §15.4.5 304 Not Modified) for the routes of `app` that opt
 * in with `config: { conditionalGet: true }`: a 200 gets `ETag` ({@link entityTagOf}) and `Cache-Control`
 * ({@link CONDITIONAL_CACHE_CONTROL}); when `If-None-Match` matches that tag (a list, `*`, `W/` ignored: the weak
 * comparison §13.1.2 asks for), the answer becomes a 304 with no body and the 200's other fields (`Link`, the rate
 * limit, `API-Key-Expires`, a route's own). Any other status, errors included, is left alone: no tag, no 304.
 *
 * Register it after the hooks that shape the body (the JSON newline) and before the guard's (request.guard.ts), which
 * gives a 304's unit back and writes the rate-limit fields. Throws nothing.
 */
export function answerConditionalGets(app: FastifyInstance): void {
  app.addHook('onSend', (request, reply, payload, done) => {
    const bytes = typeof payload === 'string' || Buffer.isBuffer(payload);
    if (!request.routeOptions.config?.conditionalGet || reply.statusCode !== 200 || !bytes) return done();
    const link = reply.getHeader('link');
    const tag = entityTagOf(payload, typeof link === 'string' ? link : undefined);
    reply.header('ETag', tag).header('Cache-Control', CONDITIONAL_CACHE_CONTROL);
    // fresh() alone would also let Cache-Control: no-cache and If-Modified-Since decide; RFC 9110 §13.2.2 evaluates
    // If-None-Match only, when sent, so only it is passed on.
    if (!fresh({ 'if-none-match': request.headers['if-none-match'] }, { etag: tag })) return done();
    reply.code(304).removeHeader('content-type');
    // GET: no body, so Fastify sends no Content-Length. HEAD: its own hook, after this one, sends the 200's
    // Content-Length, which RFC 9110 §8.6 allows on a 304.
    done(null, request.method === 'HEAD' ? payload : null);
  });
}
