import type { FastifyInstance } from 'fastify';

/** `application/json` and the `+json` types (`application/problem+json`, `application/graphql-response+json`), any parameters. */
const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

/**
 * Ends every JSON response body with a newline (docs/rest.md), so that the outputs of
 * consecutive `curl` commands do not run together. An `onSend` hook on the serialised string,
 * so the routes keep Fastify's fast-json-stringify serialisers; Fastify sets `Content-Length`
 * after `onSend`, so it counts the newline (HEAD included). Bodies that already end with one
 * (Apollo Server's) and bodies that are not strings (streams, buffers: static files) are left
 * as they are; so is every other media type.
 *
 * @param app - the root instance: the hook applies to every route, the 404 and error answers included.
 */
export function endJsonWithNewline(app: FastifyInstance): void {
  app.addHook('onSend', async (_request, reply, payload) => {
    if (typeof payload !== 'string' || payload.length === 0 || payload.endsWith('\n')) return payload;
    const type = reply.getHeader('content-type');
    return typeof type === 'string' && JSON_TYPE.test(type) ? `${payload}\n` : payload;
  });
}
