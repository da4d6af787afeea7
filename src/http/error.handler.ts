import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode, toAppError } from '../errors/error-catalogue';
import { writeRawHttpError } from './raw-http-error';

/** The app's error handler and `frameworkErrors` (docs/errors.md); anything unexpected is logged in full. */
export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply, body = (appError: AppError): unknown => appError.toBody()): void {
  const { appError, unexpected } = toAppError(error);
  if (unexpected) request.log.error({ err: error }, 'unexpected error');
  reply.code(appError.status).headers(appError.headers).send(body(appError));
}

/** The app's not-found handler. */
export async function refuseUnknownRoute(request: FastifyRequest): Promise<never> {
  throw new AppError('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`);
}

/** Node's client error codes that are not a plain 400. */
const CLIENT_ERROR_CODES: Readonly<Record<string, ErrorCode>> = {
  HPE_HEADER_OVERFLOW: 'REQUEST_HEADER_FIELDS_TOO_LARGE',
  ERR_HTTP_REQUEST_TIMEOUT: 'REQUEST_TIMEOUT',
};

/** A request line (RFC 9112 section 3). */
const REQUEST_LINE = /(?:^|\n)([!#$%&'*+.^_`|~0-9A-Za-z-]+) [^ \r\n]+ HTTP\/\d\.\d\r?\n/g;

/**
 * The method of the last request line Node was parsing (earlier ones on the connection were served);
 * undefined when the bytes hold none (a head sent in pieces, a timeout).
 */
function methodOf(error: NodeJS.ErrnoException): string | undefined {
  const { rawPacket, bytesParsed } = error as { rawPacket?: unknown; bytesParsed?: unknown };
  if (!Buffer.isBuffer(rawPacket)) return undefined;
  const end = typeof bytesParsed === 'number' && bytesParsed <= rawPacket.length ? bytesParsed : rawPacket.length;
  return [...rawPacket.toString('latin1', 0, end).matchAll(REQUEST_LINE)].at(-1)?.[1];
}

/** Node's `clientError` handler: unparseable or late requests still get the Error body; a HEAD none (RFC 9110 section 9.3.2). */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (!socket.writable) return;
  writeRawHttpError(socket, new AppError(CLIENT_ERROR_CODES[error.code ?? ''] ?? 'BAD_REQUEST'), methodOf(error) === 'HEAD');
}
