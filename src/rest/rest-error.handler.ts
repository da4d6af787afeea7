import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode, toAppError } from '../errors/error-catalogue';
import { writeRawHttpError } from '../errors/raw-http-error';

/**
 * Fastify error handler of the REST surface: sends the spec's Error body
 * `{ code, message, status }` with `status` equal to the HTTP status, plus the error's headers.
 * Unexpected errors are logged in full and answered with a generic 500.
 */
export function sendRestError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const { appError, unexpected } = toAppError(error);
  if (unexpected) request.log.error({ err: error }, 'unexpected error');
  reply.code(appError.status).headers(appError.headers).send(appError.toBody());
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
