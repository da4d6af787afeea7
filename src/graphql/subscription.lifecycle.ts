import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket, WebSocketServer } from 'ws';
import type { ApiKeyService } from '../auth/api-key.service';
import { ConnectionSlots } from '../guard/connection-slots';
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

/** setTimeout's longest delay; a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The open WebSocket connections of this instance: per-key limit, key re-checks, expiry, gauges, shutdown
 * (docs/subscriptions.md "Limits", docs/api-keys.md "Revocation").
 *
 * A connection's key is judged again, and its sockets closed with 4403 once it is revoked or expired:
 * - at its expiry instant, by a timer per connection armed from the connection's credential (`expiresAt`), so
 *   without a database query; a re-check that finds a new expiry (the key was rolled) re-arms it;
 * - at once when this process forgets the key (ApiKeyService `onForget`: revoked or rolled here, or announced by
 *   another process through Redis), or forgets every key (the Redis subscription was lost): {@link closeInactive};
 * - every `keyRecheckMs`, for changes nothing announced (no Redis).
 */
export function connectionLifecycle({ apiKeys, metrics, keyRecheckMs, log }: LifecycleOptions) {
  const connections = new Map<WebSocket, Connection>();
  const perKey = new ConnectionSlots();
  /** Each held connection's expiry timer, when its key expires. */
  const expiries = new Map<WebSocket, NodeJS.Timeout>();
  /** Running graphql-ws ids per socket, so a gauge is decremented once. */
  const running = new WeakMap<WebSocket, Set<string>>();

  const release = (socket: WebSocket) => {
    clearTimeout(expiries.get(socket));
    expiries.delete(socket);
    const connection = connections.get(socket);
    if (!connection) return;
    connections.delete(socket);
    perKey.give(connection.apiKeyId);
  };

  const closeRevoked = (socket: WebSocket) => socket.close(SUBSCRIPTION_CLOSE.revoked.code, SUBSCRIPTION_CLOSE.revoked.reason);

  /** Closes `socket` when `expiresAt` comes (null: never), instead of at any earlier-armed time. */
  const expireAt = (socket: WebSocket, expiresAt: Date | null) => {
    clearTimeout(expiries.get(socket));
    expiries.delete(socket);
    if (expiresAt === null) return;
    const delay = expiresAt.getTime() - Date.now();
    if (delay <= 0) return closeRevoked(socket);
    const timer = setTimeout(() => expireAt(socket, expiresAt), Math.min(delay, MAX_TIMER_MS));
    timer.unref();
    expiries.set(socket, timer);
  };

  /**
   * Looks keys `ids` (default: every open connection's) up again: closes with 4403 the sockets of those no longer
   * active, re-arms the others' expiry.
   * @throws DatabaseDeadlineError (503) when the database does not answer in time.
   */
  const closeInactive = async (ids?: Iterable<number>): Promise<void> => {
    const only = ids === undefined ? undefined : new Set(ids);
    const open = new Set([...connections.values()].map((connection) => connection.apiKeyId).filter((id) => only === undefined || only.has(id)));
    if (open.size === 0) return;
    const active = await apiKeys.activeIds(open);
    for (const [socket, { apiKeyId }] of connections) {
      if (!open.has(apiKeyId)) continue;
      if (active.has(apiKeyId)) expireAt(socket, active.get(apiKeyId) ?? null);
      else closeRevoked(socket);
    }
  };
  const recheck = (ids?: readonly number[]) =>
    closeInactive(ids).catch((error: unknown) => log.warn({ err: error }, 'cannot re-check the API keys of open WebSockets now'));

  const stopHearing = apiKeys.onForget((ids) => void recheck(ids));
  // Keys revoked elsewhere and not announced (no Redis) close their sockets within the cache period.
  const periodic = setInterval(() => void recheck(), keyRecheckMs);
  periodic.unref();

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
      if (!perKey.take(connection.apiKeyId)) return false;
      connections.set(socket, connection);
      // Closed while it was being checked: nothing to keep.
      if (socket.readyState !== socket.OPEN) release(socket);
      else expireAt(socket, connection.credential?.expiresAt ?? null);
      return true;
    },
    of: (socket: WebSocket): Connection | undefined => connections.get(socket),
    closeInactive,
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
      clearInterval(periodic);
      stopHearing();
      for (const timer of expiries.values()) clearTimeout(timer);
      expiries.clear();
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
