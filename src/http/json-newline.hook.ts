import type { FastifyInstance } from 'fastify';

/** `application/json` and the `+json` types (`application/problem+json`, `application/graphql-response+json`), any parameters. */
const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

/**
 * Ends every JSON response body with a newline so consecutive `curl` outputs do not run together
 * (docs/rest.md). Done in `onSend` so routes keep fast-json-stringify, and `Content-Length`, set
 * after `onSend`, counts the newline. Register on the root instance to cover 404s and errors.
 */
export function endJsonWithNewline(app: FastifyInstance): void {
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (typeof payload !== 'string' || payload.length === 0 || payload.endsWith('\n')) return done(null, payload);
    const type = reply.getHeader('content-type');
    done(null, typeof type === 'string' && JSON_TYPE.test(type) ? `${payload}\n` : payload);
  });
}
