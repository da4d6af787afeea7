import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AppError } from './error-catalogue';

/**
 * Answers an AppError on a socket Fastify does not own (`clientError`, a refused upgrade) and ends it, with the
 * headers Fastify's error answers carry (security-headers.ts); `head` sends no body.
 */
export function writeRawHttpError(socket: Duplex, error: AppError, head = false): void {
  const body = `${JSON.stringify(error.toBody())}\n`;
  const own = Object.entries(error.headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.end(
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\n${own.join('')}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${head ? '' : body}`,
  );
}
