import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { CloseCode, type Server } from 'graphql-ws';
import type { WebSocket } from 'ws';
import { SUBSCRIPTION_CLOSE } from './subscription-close.codes';
import { SUBSCRIPTION_LIMITS } from '../limits';

/** What graphql-ws's hooks get in `ctx.extra`: the socket and its upgrade request. */
export interface SocketExtra {
  socket: WebSocket;
  request: IncomingMessage;
}

/** Bytes of the random payload of each keep-alive ping: unguessable, so only a peer that read the ping can echo it. */
const PING_PAYLOAD_BYTES = 16;

/**
 * Pings `socket` every {@link SUBSCRIPTION_LIMITS}.keepAliveMs with a fresh random payload and
 * terminates it when the previous ping's payload has not been echoed by then (docs/subscriptions.md
 * "Limits"). Only a pong that echoes the payload counts: RFC 6455 §5.5.3 allows unsolicited
 * pongs, and a peer that sends them without reading would otherwise never be dropped.
 * The timer stops when the socket closes (shutdown closes every socket).
 *
 * @param socket - an open server-side socket.
 * @param log - where a dropped peer is noted.
 */
function keepAlive(socket: WebSocket, log: FastifyBaseLogger): void {
  let awaited: Buffer | undefined;
  socket.on('pong', (data: Buffer) => {
    if (awaited?.equals(data)) awaited = undefined;
  });
  const timer = setInterval(() => {
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
 * Runs graphql-ws's protocol (`server`, from its `makeServer`) on one accepted socket, as
 * graphql-ws/use/ws does, except for two things (docs/subscriptions.md):
 * - A send is queued on the socket without waiting for it to drain. Waiting, as graphql-ws/use/ws
 *   does, leaves the events of a peer that stops reading in the pub/sub's queues, without bound
 *   and uncounted; here they wait in ws's buffer, counted by `bufferedAmount`, and a message that
 *   would take it past {@link SUBSCRIPTION_LIMITS}.maxBufferedBytes closes the socket with 1008
 *   instead (ws cuts it when the peer has not answered the close within 30 s).
 * - The keep-alive accepts only pongs that echo its ping (see {@link keepAlive}).
 *
 * @param server - graphql-ws's server, with this module's {@link SocketExtra}.
 * @param socket - the socket ws just accepted (subprotocol chosen by graphql-ws's `handleProtocols`).
 * @param request - its upgrade request.
 * @param log - where a message the server fails to handle is logged (the socket is then closed with 4500).
 */
export function openSubscriptionSocket(server: Server<SocketExtra>, socket: WebSocket, request: IncomingMessage, log: FastifyBaseLogger): void {
  // ws has already closed the socket for a protocol error (1002, 1007, 1009) or a reset; nothing else to do.
  socket.on('error', (error) => log.debug({ err: error }, 'websocket error'));
  const closed = server.opened(
    {
      protocol: socket.protocol,
      send: (data) => {
        if (socket.readyState !== socket.OPEN) return;
        if (socket.bufferedAmount + Buffer.byteLength(data) > SUBSCRIPTION_LIMITS.maxBufferedBytes) {
          log.warn({ bufferedBytes: socket.bufferedAmount, closeCode: SUBSCRIPTION_CLOSE.slowConsumer.code }, 'closing a WebSocket whose peer stopped reading');
          socket.close(SUBSCRIPTION_CLOSE.slowConsumer.code, SUBSCRIPTION_CLOSE.slowConsumer.reason);
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
  socket.once('close', (code: number, reason: Buffer) => {
    closed(code, String(reason)).catch((error: unknown) => log.error({ err: error }, 'unexpected error ending the subscriptions of a WebSocket'));
  });
  keepAlive(socket, log);
}
