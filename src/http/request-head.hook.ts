import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/error-catalogue';

/** How many times the request head carries the header `name` (lower case). */
function countHeader(request: IncomingMessage, name: string): number {
  let count = 0;
  for (let i = 0; i < request.rawHeaders.length; i += 2) if (request.rawHeaders[i].toLowerCase() === name) count += 1;
  return count;
}

/** RFC 9112 section 3.2: an HTTP/1.1 request has exactly one Host; any request at most one. */
function hasBadHost(request: IncomingMessage): boolean {
  const hosts = countHeader(request, 'host');
  return hosts > 1 || (hosts === 0 && request.httpVersion === '1.1');
}

/**
 * Refuses, in the spec's Error body, two kinds of request heads that Node's HTTP server would
 * otherwise refuse itself with an empty body (docs/errors.md):
 * - a Host header missing from an HTTP/1.1 request, or repeated: 400 BAD_REQUEST (RFC 9112
 *   section 3.2). Node's own check (`requireHostHeader`) must be off for this one to run, and
 *   it never counted repeated Host headers;
 * - a repeated Authorization header: 400 BAD_REQUEST. Node keeps the first and drops the rest,
 *   so which credentials count would depend on their order (RFC 9110 section 5.3: a field that
 *   is not a list must not be repeated);
 * - an `Expect` that Node cannot meet (anything but 100-continue, which Node answers itself):
 *   417 EXPECTATION_FAILED (RFC 9110 section 10.1.1). Node hands such requests to a
 *   'checkExpectation' listener; this one passes them to the app, marked, instead of letting
 *   Node answer 417 without a body.
 * Both answers close the connection, and pass the app's hooks like any answer (request id,
 * log line, metrics, security headers). They carry the Error body on every path, /graphql
 * included: like the answers to unparseable requests (`answerClientError`), they are about
 * the HTTP message, before any surface reads it.
 *
 * @param app - the Fastify app, before its routes are registered.
 */
export function refuseBadRequestHeads(app: FastifyInstance): void {
  const unmetExpectations = new WeakSet<IncomingMessage>();
  app.server.on('checkExpectation', (request: IncomingMessage, response) => {
    unmetExpectations.add(request);
    app.server.emit('request', request, response);
  });
  app.addHook('onRequest', async (request, reply) => {
    let refusal: AppError | undefined;
    if (unmetExpectations.has(request.raw)) {
      refusal = new AppError('EXPECTATION_FAILED');
    } else if (hasBadHost(request.raw)) {
      refusal = new AppError('BAD_REQUEST', 'An HTTP/1.1 request must carry exactly one Host header.');
    } else if (countHeader(request.raw, 'authorization') > 1) {
      refusal = new AppError('BAD_REQUEST', 'A request may carry at most one Authorization header.');
    }
    if (refusal) return reply.code(refusal.status).header('connection', 'close').send(refusal.toBody());
  });
}
