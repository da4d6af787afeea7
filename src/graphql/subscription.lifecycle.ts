import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket, WebSocketServer } from 'ws';
import type { FeedStream, StreamEnd, StreamTransport } from '../following/feed-followers';
import { SUBSCRIPTION_LIMITS } from '../limits';
import type { Metrics } from '../observability/metrics.registry';
import { SUBSCRIPTION_CLOSE } from './subscription-close.codes';
import { SURFACE_PATHS } from '../surface-paths';

/**
 * A WebSocket as a stream of FeedFollowers: ended with 4403 (its key) or 1001 (shutdown), cut by terminating it. Bound to
 * its WebSocket once ws has made it: an upgrade that carries its key is admitted before (the raw socket is cut then).
 */
export class SocketTransport implements StreamTransport {
  readonly transport = 'websocket';
  private socket: WebSocket | undefined;

  /** @param raw - the upgrade's socket, cut when the stream ends before ws has made the WebSocket. */
  constructor(private readonly raw: Duplex) {}

  /** The WebSocket ws made of the upgrade. */
  bind(socket: WebSocket): void {
    this.socket = socket;
  }

  buffered(): number {
    return this.socket?.bufferedAmount ?? 0;
  }

  end(why: StreamEnd): void {
    if (!this.socket) return void this.raw.destroy();
    const close = why.reason === 'key' ? SUBSCRIPTION_CLOSE.revoked : SUBSCRIPTION_CLOSE.goingAway;
    this.socket.close(close.code, close.reason);
  }

  cut(): void {
    if (this.socket) this.socket.terminate();
    else this.raw.destroy();
  }
}

/** What the lifecycle needs (docs/subscriptions.md). */
export interface LifecycleOptions {
  metrics: Pick<Metrics, 'countOpenSocket' | 'countActiveSubscription'>;
  log: FastifyBaseLogger;
}

/**
 * The open WebSockets of this instance, as GraphQL sees them: each admitted one's FeedStream (its key, budget, pace and
 * end are FeedFollowers'), the sockets and subscriptions gauges, the close log line, and the close of the sockets not
 * yet admitted at shutdown (docs/subscriptions.md "Limits", docs/operations.md "Logs").
 */
export function connectionLifecycle({ metrics, log }: LifecycleOptions) {
  const streams = new Map<WebSocket, FeedStream>();
  /** Running graphql-ws ids per socket, so a gauge is decremented once. */
  const running = new WeakMap<WebSocket, Set<string>>();

  return {
    /** Counts a socket until it closes, then logs it and gives its stream's place back. */
    opened(socket: WebSocket): void {
      metrics.countOpenSocket(1);
      const openedAt = performance.now();
      socket.once('close', (code: number) => {
        metrics.countOpenSocket(-1);
        const durationMs = Math.round((performance.now() - openedAt) * 1000) / 1000;
        const stream = streams.get(socket);
        log.info({ route: SURFACE_PATHS.graphql, surface: 'websocket', apiKeyId: stream?.apiKeyId ?? null, closeCode: code, durationMs }, 'websocket closed');
        streams.delete(socket);
        stream?.release();
      });
    },
    /** Holds `socket`'s admitted stream until the socket closes (at once when it closed while being admitted). */
    hold(socket: WebSocket, stream: FeedStream): void {
      if (socket.readyState !== socket.OPEN) return stream.release();
      streams.set(socket, stream);
    },
    of: (socket: WebSocket): FeedStream | undefined => streams.get(socket),
    started(socket: WebSocket, id: string): void {
      const ids = running.get(socket) ?? new Set<string>();
      running.set(socket, ids.add(id));
      metrics.countActiveSubscription(1);
    },
    ended(socket: WebSocket, id: string): void {
      if (running.get(socket)?.delete(id)) metrics.countActiveSubscription(-1);
    },
    /** Closes with 1001 the sockets FeedFollowers does not hold (not admitted yet); resolves once every socket has closed. */
    async close(wss: WebSocketServer): Promise<void> {
      // Peers that do not answer the close in time are cut, so the server can close.
      const cut = setTimeout(() => {
        for (const socket of wss.clients) socket.terminate();
      }, SUBSCRIPTION_LIMITS.closeHandshakeMs);
      try {
        for (const socket of wss.clients) if (!streams.has(socket)) socket.close(SUBSCRIPTION_CLOSE.goingAway.code, SUBSCRIPTION_CLOSE.goingAway.reason);
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      } finally {
        clearTimeout(cut);
      }
    },
  };
}
