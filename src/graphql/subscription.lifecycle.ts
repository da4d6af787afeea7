import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket, WebSocketServer } from 'ws';
import type { ApiKeyService } from '../auth/api-key.service';
import type { GuardState } from '../guard/guard';
import { SUBSCRIPTION_LIMITS } from '../limits';
import type { Metrics } from '../observability/metrics.registry';
import { SUBSCRIPTION_CLOSE } from './subscription-close.codes';
import { SURFACE_PATHS } from '../surface-paths';

/** An admitted connection: its guard state, through which its subscriptions are charged. */
export type Connection = GuardState & { apiKeyId: number };

/** What the lifecycle needs (docs/subscriptions.md). */
export interface LifecycleOptions {
  apiKeys: ApiKeyService;
  metrics: Metrics;
  keyRecheckMs: number;
  log: FastifyBaseLogger;
}

/** The open WebSocket connections of this instance: per-key limit, key re-checks, gauges, shutdown (docs/subscriptions.md "Limits"). */
export function connectionLifecycle({ apiKeys, metrics, keyRecheckMs, log }: LifecycleOptions) {
  const connections = new Map<WebSocket, Connection>();
  const perKey = new Map<number, number>();
  /** Running graphql-ws ids per socket, so a gauge is decremented once. */
  const running = new WeakMap<WebSocket, Set<string>>();

  const release = (socket: WebSocket) => {
    const connection = connections.get(socket);
    if (!connection) return;
    connections.delete(socket);
    const left = (perKey.get(connection.apiKeyId) ?? 1) - 1;
    if (left > 0) perKey.set(connection.apiKeyId, left);
    else perKey.delete(connection.apiKeyId);
  };

  // Keys revoked elsewhere (the CLI, another instance) close their sockets within the cache period.
  const recheck = setInterval(() => {
    const ids = new Set([...connections.values()].map((connection) => connection.apiKeyId));
    if (ids.size === 0) return;
    apiKeys.activeIds(ids).then(
      (active) => {
        for (const [socket, connection] of connections) {
          if (!active.has(connection.apiKeyId)) socket.close(SUBSCRIPTION_CLOSE.revoked.code, SUBSCRIPTION_CLOSE.revoked.reason);
        }
      },
      (error: unknown) => log.warn({ err: error }, 'cannot re-check the API keys of open WebSockets now'),
    );
  }, keyRecheckMs);
  recheck.unref();

  return {
    /** Counts a socket until it closes, then logs it (docs/operations.md "Logs"). */
    opened(socket: WebSocket): void {
      metrics.countOpenSocket(1);
      const openedAt = performance.now();
      socket.once('close', (code: number) => {
        metrics.countOpenSocket(-1);
        const durationMs = Math.round((performance.now() - openedAt) * 1000) / 1000;
        log.info(
          { route: SURFACE_PATHS.graphql, surface: 'websocket', apiKeyId: connections.get(socket)?.apiKeyId ?? null, closeCode: code, durationMs },
          'websocket closed',
        );
        release(socket);
      });
    },
    /** False when its key has all the connections it may have here. */
    hold(socket: WebSocket, connection: Connection): boolean {
      const open = perKey.get(connection.apiKeyId) ?? 0;
      if (open >= SUBSCRIPTION_LIMITS.maxConnectionsPerKey) return false;
      perKey.set(connection.apiKeyId, open + 1);
      connections.set(socket, connection);
      // Closed while it was being checked: nothing to keep.
      if (socket.readyState !== socket.OPEN) release(socket);
      return true;
    },
    of: (socket: WebSocket): Connection | undefined => connections.get(socket),
    started(socket: WebSocket, id: string): void {
      const ids = running.get(socket) ?? new Set<string>();
      running.set(socket, ids.add(id));
      metrics.countActiveSubscription(1);
    },
    ended(socket: WebSocket, id: string): void {
      if (running.get(socket)?.delete(id)) metrics.countActiveSubscription(-1);
    },
    /** Closes every socket with 1001; resolves once all have closed. */
    async close(wss: WebSocketServer): Promise<void> {
      clearInterval(recheck);
      // Peers that do not answer the close in time are cut, so the server can close.
      const cut = setTimeout(() => {
        for (const socket of wss.clients) socket.terminate();
      }, SUBSCRIPTION_LIMITS.closeHandshakeMs);
      try {
        for (const socket of wss.clients) socket.close(SUBSCRIPTION_CLOSE.goingAway.code, SUBSCRIPTION_CLOSE.goingAway.reason);
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      } finally {
        clearTimeout(cut);
      }
    },
  };
}
