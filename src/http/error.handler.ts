import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode, toAppError } from '../errors/error-catalogue';
import { writeRawHttpError } from '../errors/raw-http-error';

/**
 * The app's error handler (and its `frameworkErrors`, docs/errors.md): the error's status and
 * headers, and by default the spec's Error body `{ code, message, status }`. Unexpected errors
 * are logged in full and answered with a generic 500; a client's mistake keeps its 4xx.
 *
 * @param body - the body for the AppError to send, when not the Error body (GraphQL's `{ errors }`).
 */
export function sendError(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  body: (appError: AppError) => unknown = (appError) => appError.toBody(),
): void {
  const { appError, unexpected } = toAppError(error);
  if (unexpected) request.log.error({ err: error }, 'unexpected error');
  reply.code(appError.status).headers(appError.headers).send(body(appError));
}

/** The app's not-found handler: 404 NOT_FOUND naming the method and path, through {@link sendError}. */
export async function refuseUnknownRoute(request: FastifyRequest): Promise<never> {
  throw new AppError('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`);
}

/** Node's client error codes that are not a plain 400. */
const CLIENT_ERROR_CODES: Readonly<Record<string, ErrorCode>> = {
  HPE_HEADER_OVERFLOW: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
  ERR_HTTP_REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
};

/** A request line (RFC 9112 section 3): method, target, HTTP version, at the start of a line. */
const REQUEST_LINE = /(?:^|\n)([!#$%&'*+.^_`|~0-9A-Za-z-]+) [^ \r\n]+ HTTP\/\d\.\d\r?\n/g;

/**
 * The method of the request Node could not parse, read from the bytes Node was parsing
 * (`rawPacket`, up to `bytesParsed`, where parsing stopped): the last request line there, as
 * requests before it on a keep-alive connection were served. Undefined when those bytes hold
 * no request line: it came in an earlier packet (a head over 16 KiB sent in pieces), or the
 * error is a timeout, which carries no bytes.
 */
function methodOf(error: NodeJS.ErrnoException): string | undefined {
  const { rawPacket, bytesParsed } = error as { rawPacket?: unknown; bytesParsed?: unknown };
  if (!Buffer.isBuffer(rawPacket)) return undefined;
  const end = typeof bytesParsed === 'number' && bytesParsed <= rawPacket.length ? bytesParsed : rawPacket.length;
  return [...rawPacket.toString('latin1', 0, end).matchAll(REQUEST_LINE)].at(-1)?.[1];
}

/**
 * Node's `clientError` handler (Fastify's `clientErrorHandler` option): a request Node cannot
 * even parse (a malformed header or Content-Length, headers over the size limit) or that took
 * too long still gets the spec's Error body, then the connection closes. The answer to a HEAD
 * request has the same head (Content-Length states the body's length) and no body (RFC 9110
 * section 9.3.2), when the bytes Node was parsing show it was a HEAD (see `methodOf`).
 *
 * @param error - Node's error; `code` HPE_HEADER_OVERFLOW means the headers were too large,
 *   ERR_HTTP_REQUEST_TIMEOUT that the request took longer than the request timeout;
 *   `rawPacket` and `bytesParsed`, when present, tell which request failed.
 * @param socket - the client connection, answered by `writeRawHttpError` (errors/raw-http-error.ts).
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable) return;
  writeRawHttpError(socket, new AppError(CLIENT_ERROR_CODES[error.code ?? ''] ?? 'BAD_REQUEST'), methodOf(error) === 'HEAD');
}
