import { Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { ServiceState } from '../observability/service-state';

/**
 * Once the server has stopped accepting connections (shutdown), every answer carries
 * `Connection: close`: the client opens its next request on a new connection, which is refused,
 * so it goes elsewhere, instead of finding its kept-alive connection closed under it.
 * Not during the drain: a client that reconnected then might still be in the kernel's accept
 * queue when the listener closes, and those connections are reset.
 */
export function closeConnectionsOnceNotAccepting(app: FastifyInstance, state: ServiceState): void {
  app.addHook('onSend', async (_request, reply) => {
    if (state.draining && !app.server.listening) reply.header('Connection', 'close');
  });
}

/** What to close once the listener has stopped accepting, per HTTP server (a plugin's instance is not the root's, the server is). */
const closers = new WeakMap<FastifyInstance['server'], Array<() => Promise<void>>>();

/**
 * Registers what {@link drainAndClose} closes right after the listener stops accepting, before it
 * waits for the connections to end: connections that are not HTTP requests (upgraded WebSockets)
 * and would otherwise keep the server open. Also run by `app.close()` (its `preClose` hook),
 * so `close` must be safe to call twice.
 *
 * @param close - resolves once those connections are closed.
 */
export function onStopAccepting(app: FastifyInstance, close: () => Promise<void>): void {
  closers.set(app.server, [...(closers.get(app.server) ?? []), close]);
  app.addHook('preClose', close);
}

/**
 * Stops the app without resetting a connection it accepted (docs/operations.md "Signals"):
 * 1. `state.draining`: `/readyz` answers 503 for `drainMs` while the server still serves as
 *    before, so load balancers move new traffic away;
 * 2. the server stops accepting; each open connection closes after its next response (with
 *    `Connection: close`), or once idle past the keep-alive timeout it advertised (clients stop
 *    reusing it before that), so no request sent on one is lost. After `graceMs` the idle
 *    connections are closed and those with a request still on them are cut. WebSockets
 *    (subscriptions) are closed with 1001 Going Away as the listener closes ({@link onStopAccepting}).
 * Closing the app then stops Apollo, the idempotency purge and the Redis client.
 *
 * @returns `clean` when no request had to be cut at the end of the grace period, else `timed-out`.
 */
export async function drainAndClose(
  app: FastifyInstance,
  state: ServiceState,
  { drainMs, graceMs }: { drainMs: number; graceMs: number },
): Promise<'clean' | 'timed-out'> {
  state.draining = true;
  if (drainMs > 0) await sleep(drainMs);
  const server = app.server;
  let outcome: 'clean' | 'timed-out' = 'clean';
  const deadline = setTimeout(() => {
    server.closeIdleConnections();
    server.getConnections((_error, open) => {
      if (open === 0) return;
      outcome = 'timed-out';
      server.closeAllConnections();
    });
  }, graceMs);
  try {
    // net.Server's close, not http.Server's: since Node 19 the latter also destroys idle
    // keep-alive connections at once, resetting a request a client has just sent on one.
    // Calls back when the last connection has closed.
    const closed = new Promise<void>((resolve) => Server.prototype.close.call(server, () => resolve()));
    await Promise.all((closers.get(server) ?? []).map((close) => close()));
    await closed;
    await app.close();
  } finally {
    clearTimeout(deadline);
  }
  return outcome;
}
