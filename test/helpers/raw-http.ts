import { connect } from 'node:net';

/** What a raw client saw on one connection. */
export interface RawExchange {
  /** Every byte the server sent, as latin1 text (byte for byte). */
  received: string;
  /** Milliseconds from the moment the connection was established to the server closing it. */
  closedAfterMs: number;
  /** Milliseconds from the last byte received to the close (the idle time before it); equals closedAfterMs when nothing came. */
  idleBeforeCloseMs: number;
}

/**
 * Opens a TCP connection to the app, writes `request` byte for byte (nothing when empty),
 * and collects everything the server sends until it closes the connection: how a client sees
 * what fetch cannot send or show (no Host header, oversized heads, the bytes after a HEAD
 * answer, timeouts). Our side stays open, like a client waiting for its answer (Node drops
 * the answers of a client that half-closes), so send requests the server closes after
 * (`Connection: close`, an error, a timeout, or wait for the keep-alive timeout).
 *
 * @param url - the app's base URL (`http://127.0.0.1:port`).
 * @param request - the raw bytes to send.
 * @param options.giveUpAfterMs - reject when the server has not closed by then (default 30 s).
 */
export function exchangeRaw(url: string, request: string | Buffer, options: { giveUpAfterMs?: number } = {}): Promise<RawExchange> {
  const { port, hostname } = new URL(url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let connectedAt = 0;
    let lastByteAt = 0;
    const socket = connect(Number(port), hostname, () => {
      connectedAt = performance.now();
      if (request.length > 0) socket.write(request);
    });
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${options.giveUpAfterMs ?? 30_000} ms; received: ${Buffer.concat(chunks).toString('latin1')}`));
    }, options.giveUpAfterMs ?? 30_000);
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      lastByteAt = performance.now();
    });
    socket.on('error', () => {
      // A reset after the answer counts as a close; what was received is what matters.
    });
    socket.on('close', () => {
      clearTimeout(giveUp);
      const closedAt = performance.now();
      resolve({
        received: Buffer.concat(chunks).toString('latin1'),
        closedAfterMs: closedAt - connectedAt,
        idleBeforeCloseMs: closedAt - (lastByteAt || connectedAt),
      });
    });
  });
}

/** One HTTP/1.1 response read from raw bytes. */
export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** The bytes after the blank line that ends the head (latin1 text). */
  body: string;
}

/**
 * Splits the first response out of raw bytes: status, headers and everything after the head.
 *
 * @throws Error when the bytes do not start with an HTTP/1.1 status line and a complete head.
 */
export function parseRawResponse(received: string): RawResponse {
  const end = received.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = received.slice(0, end).split('\r\n');
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(statusLine ?? '')?.[1];
  if (end < 0 || status === undefined) throw new Error(`not an HTTP/1.1 response: ${JSON.stringify(received)}`);
  const headers = Object.fromEntries(
    lines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  return { status: Number(status), headers, body: received.slice(end + 4) };
}
