import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { CloseCode, type Server } from 'graphql-ws';
import type { WebSocket } from 'ws';
import type { ReaderPace } from '../following/reader-pace';
import { TurnCork } from '../following/turn-cork';
import { SUBSCRIPTION_CLOSE } from './subscription-close.codes';
import { FOLLOWER_LIMITS, SUBSCRIPTION_LIMITS } from '../limits';

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
 * Runs graphql-ws's protocol on one accepted socket, as graphql-ws/use/ws does, paced by the rule of every stream of
 * the feed (ReaderPace, FOLLOWER_LIMITS): graphql-ws awaits each send, so a subscription whose peer has
 * `pauseAtBytes` waiting takes no more events until it reads (its follower holds only a position), a peer that reads
 * nothing for `stalledReaderMs` is closed with 1008, and nothing ever queues beyond `maxBufferedBytes`. `paceOf` gives
 * the socket's pace once it is admitted; before that only the byte bound holds. The messages sent to the socket in one
 * turn of the event loop (a feed advance's events, to each of its subscriptions) leave in one write of `request.socket`,
 * the connection ws writes to ({@link TurnCork}).
 */
export function openSubscriptionSocket(
  server: Server<SocketExtra>,
  socket: WebSocket,
  request: IncomingMessage,
  log: FastifyBaseLogger,
  paceOf: () => ReaderPace | undefined,
): void {
  // ws has already closed the socket for a protocol error or a reset.
  socket.on('error', (error) => log.debug({ err: error }, 'websocket error'));
  // Once: its subscriptions return their iterators, so each leaves the change feed.
  let ended: Promise<void> | undefined;
  const end = (code: number, reason: string) =>
    (ended ??= closed(code, reason).catch((error: unknown) => log.error({ err: error }, 'unexpected error ending the subscriptions of a WebSocket')));
  const cutSlow = () => {
    if (socket.readyState !== socket.OPEN) return;
    log.warn(
      { transport: 'websocket', bufferedBytes: socket.bufferedAmount, closeCode: SUBSCRIPTION_CLOSE.slowConsumer.code },
      'closing a stream whose client stopped reading',
    );
    socket.close(SUBSCRIPTION_CLOSE.slowConsumer.code, SUBSCRIPTION_CLOSE.slowConsumer.reason);
    // Now, not when the peer that stopped reading answers the close (up to 30 s).
    void end(SUBSCRIPTION_CLOSE.slowConsumer.code, SUBSCRIPTION_CLOSE.slowConsumer.reason);
  };
  // Each write done is progress for the pace: ws's `drain`.
  const written = () => paceOf()?.progressed();
  // A feed advance's events to this socket's subscriptions arrive in one turn: held until the next, they leave in one write.
  const cork = new TurnCork(request.socket);
  const closed = server.opened(
    {
      protocol: socket.protocol,
      send: async (data) => {
        if (socket.readyState !== socket.OPEN) return;
        const pace = paceOf();
        const bytes = Buffer.byteLength(data);
        if (pace ? !pace.fits(bytes) : socket.bufferedAmount + bytes > FOLLOWER_LIMITS.maxBufferedBytes) return cutSlow();
        cork.hold();
        socket.send(data, written);
        if (pace?.behind && !(await pace.catchUp())) cutSlow();
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
    paceOf()?.closed();
    void end(code, String(reason));
  });
  keepAlive(socket, log);
}
