import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { CloseCode, type Server } from 'graphql-ws';
import type { WebSocket } from 'ws';
import { SUBSCRIPTION_CLOSE } from './subscription-close.codes';
import { SUBSCRIPTION_LIMITS } from '../limits';

/** graphql-ws's `ctx.extra`. */
export interface SocketExtra {
  socket: WebSocket;
  request: IncomingMessage;
}

/** Unguessable, so only a peer that read the ping can echo it. */
const PING_PAYLOAD_BYTES = 16;

/**
 * Terminates a socket whose peer has not echoed the last ping's payload (docs/subscriptions.md
 * "Limits"). Only an echo counts: RFC 6455 §5.5.3 allows unsolicited pongs, and a peer that sent
 * them without reading would never be dropped.
 */
function keepAlive(socket: WebSocket, log: FastifyBaseLogger): void {
  let awaited: Buffer | undefined;
  socket.on('pong', (data: Buffer) => {
    if (awaited?.equals(data)) awaited = undefined;
  });
  const timer = setInterval(() => {
    // Closing (a slow consumer's 1008): ws cuts it 30 s after close() if the peer has not answered.
    if (socket.readyState !== socket.OPEN) return;
    if (awaited) {
      log.info({ closeCode: 1006 }, 'dropping a WebSocket that did not answer its keep-alive ping');
      return socket.terminate();
    }
    awaited = randomBytes(PING_PAYLOAD_BYTES);
    socket.ping(awaited);
  }, SUBSCRIPTION_LIMITS.keepAliveMs);
  timer.unref();
  socket.once('close', () => clearInterval(timer));
}

/**
 * Runs graphql-ws's protocol on one accepted socket, as graphql-ws/use/ws does, but without
 * waiting for sends to drain: waiting leaves a non-reading peer's events in the pub/sub's queues,
 * unbounded and uncounted; here ws's `bufferedAmount` counts them and a slow consumer is closed.
 */
export function openSubscriptionSocket(server: Server<SocketExtra>, socket: WebSocket, request: IncomingMessage, log: FastifyBaseLogger): void {
  // ws has already closed the socket for a protocol error or a reset.
  socket.on('error', (error) => log.debug({ err: error }, 'websocket error'));
  // Once: its subscriptions return their iterators, so each leaves the change feed.
  let ended: Promise<void> | undefined;
  const end = (code: number, reason: string) =>
    (ended ??= closed(code, reason).catch((error: unknown) => log.error({ err: error }, 'unexpected error ending the subscriptions of a WebSocket')));
  const closed = server.opened(
    {
      protocol: socket.protocol,
      send: (data) => {
        if (socket.readyState !== socket.OPEN) return;
        if (socket.bufferedAmount + Buffer.byteLength(data) > SUBSCRIPTION_LIMITS.maxBufferedBytes) {
          log.warn({ bufferedBytes: socket.bufferedAmount, closeCode: SUBSCRIPTION_CLOSE.slowConsumer.code }, 'closing a WebSocket whose peer stopped reading');
          socket.close(SUBSCRIPTION_CLOSE.slowConsumer.code, SUBSCRIPTION_CLOSE.slowConsumer.reason);
          // Now, not when the peer that stopped reading answers the close (up to 30 s).
          void end(SUBSCRIPTION_CLOSE.slowConsumer.code, SUBSCRIPTION_CLOSE.slowConsumer.reason);
          return;
        }
        socket.send(data);
      },
      close: (code, reason) => socket.close(code, reason),
      onMessage: (handle) =>
        socket.on('message', (data: Buffer) => {
          handle(String(data)).catch((error: unknown) => {
            log.error({ err: error }, 'unexpected error handling a WebSocket message');
            socket.close(CloseCode.InternalServerError, 'Internal server error');
          });
        }),
    },
    { socket, request },
  );
  socket.once('close', (code: number, reason: Buffer) => void end(code, String(reason)));
  keepAlive(socket, log);
}
