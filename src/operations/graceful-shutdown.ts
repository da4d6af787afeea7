import { Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { ServiceState } from './health.routes';

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

/**
 * Stops the app without resetting a connection it accepted (README "Operations" → "Signals"):
 * 1. `state.draining`: `/readyz` answers 503 for `drainMs` while the server still serves as
 *    before, so load balancers move new traffic away;
 * 2. the server stops accepting; each open connection closes after its next response (with
 *    `Connection: close`), or once idle past the keep-alive timeout it advertised (clients stop
 *    reusing it before that), so no request sent on one is lost. After `graceMs` the idle
 *    connections are closed and those with a request still on them are cut.
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
    await new Promise<void>((resolve) => Server.prototype.close.call(server, () => resolve()));
    await app.close();
  } finally {
    clearTimeout(deadline);
  }
  return outcome;
}
