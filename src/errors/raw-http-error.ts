import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AppError } from './error-catalogue';

/**
 * Writes an AppError as a whole HTTP/1.1 answer on a socket Fastify does not own (Node's
 * `clientError`, a refused WebSocket upgrade), then ends the socket (docs/errors.md). The head is
 * the one Fastify's error answers have: JSON with a trailing newline, `Cache-Control: no-store`
 * and `nosniff` (security-headers.ts), the error's own headers, plus `Connection: close`.
 *
 * @param socket - the client connection, answered and ended.
 * @param error - the error: its status, headers and the spec's Error body.
 * @param head - true for a HEAD request: the same head (Content-Length included) without the body.
 */
export function writeRawHttpError(socket: Duplex, error: AppError, head = false): void {
  const body = `${JSON.stringify(error.toBody())}\n`;
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    ...error.headers,
    'Content-Length': String(Buffer.byteLength(body)),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    Connection: 'close',
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.end(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n${lines.join('')}\r\n${head ? '' : body}`);
}
