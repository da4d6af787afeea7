import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../errors/error-catalogue';

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
 * Refuses, with the Error body on every path and closing the connection, heads that Node would
 * refuse with an empty body or read ambiguously (docs/errors.md): a missing or repeated Host
 * (needs Node's `requireHostHeader` off), a repeated Authorization (Node keeps only the first),
 * an unmet `Expect` (417). Call before the routes are registered.
 */
export function refuseBadRequestHeads(app: FastifyInstance): void {
  const unmetExpectations = new WeakSet<IncomingMessage>();
  app.server.on('checkExpectation', (request: IncomingMessage, response) => {
    unmetExpectations.add(request);
    app.server.emit('request', request, response);
  });
  app.addHook('onRequest', (request, reply, done) => {
    let refusal: AppError | undefined;
    if (unmetExpectations.has(request.raw)) {
      refusal = new AppError('EXPECTATION_FAILED');
    } else if (hasBadHost(request.raw)) {
      refusal = new AppError('BAD_REQUEST', 'An HTTP/1.1 request must carry exactly one Host header.');
    } else if (countHeader(request.raw, 'authorization') > 1) {
      refusal = new AppError('BAD_REQUEST', 'A request may carry at most one Authorization header.');
    }
    // Answered here: the request goes no further (no `done`).
    if (refusal) reply.code(refusal.status).header('connection', 'close').send(refusal.toBody());
    else done();
  });
}
