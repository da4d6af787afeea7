import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode, toAppError } from './error-catalogue';

/**
 * Fastify error handler of the REST surface: sends the spec's Error body
 * `{ code, message, status }` with `status` equal to the HTTP status, plus the error's headers.
 * Unexpected errors are logged in full and answered with a generic 500.
 */
export function sendRestError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const { appError, unexpected } = toAppError(error);
  if (unexpected) request.log.error({ err: error }, 'unexpected error');
  return reply.code(appError.status).headers(appError.headers).send(appError.toBody());
}

/** Node's client error codes that are not a plain 400. */
const CLIENT_ERROR_CODES: Readonly<Record<string, ErrorCode>> = {
  HPE_HEADER_OVERFLOW: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
  ERR_HTTP_REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
};

/**
 * Node's `clientError` handler (Fastify's `clientErrorHandler` option): a request Node cannot
 * even parse (a malformed header or Content-Length, headers over the size limit) still gets
 * the spec's Error body, then the connection closes.
 *
 * @param error - Node's error; `code` HPE_HEADER_OVERFLOW means the headers were too large,
 *   ERR_HTTP_REQUEST_TIMEOUT that the request took longer than the request timeout.
 * @param socket - the client connection, answered with a raw HTTP/1.1 response.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable) return;
  const code = CLIENT_ERROR_CODES[error.code ?? ''] ?? 'BAD_REQUEST';
  const appError = new AppError(code);
  const body = JSON.stringify(appError.toBody());
  socket.end(
    `HTTP/1.1 ${appError.status} ${STATUS_CODES[appError.status]}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}
