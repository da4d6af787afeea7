import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AppError } from '../errors/error-catalogue';
import { RESPONSE_HEADERS } from './security-headers';

/**
 * Answers an AppError on a socket Fastify does not own (`clientError`, a refused upgrade) and ends it, with the
 * headers Fastify's error answers carry (security-headers.ts); `head` sends no body.
 */
export function writeRawHttpError(socket: Duplex, error: AppError, head = false): void {
  const body = `${JSON.stringify(error.toBody())}\n`;
  const headers = Object.entries({ ...error.headers, 'Content-Length': String(Buffer.byteLength(body)), ...RESPONSE_HEADERS, Connection: 'close' });
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `${headers.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${head ? '' : body}`,
  );
}
