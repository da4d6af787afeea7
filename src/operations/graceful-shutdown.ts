import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { ServiceState } from './health.routes';

/**
 * While `state.draining`, every answer carries `Connection: close`, so clients and load
 * balancers open their next request elsewhere instead of reusing a connection that is about to go.
 */
export function closeConnectionsWhileDraining(app: FastifyInstance, state: ServiceState): void {
  app.addHook('onSend', async (_request, reply) => {
    if (state.draining) reply.header('Connection', 'close');
  });
}

/**
 * Stops the app without losing an accepted request (README "Operations"):
 * 1. `state.draining`: `/readyz` answers 503 and every response closes its connection, for
 *    `drainMs`, while the server still serves, so load balancers move new traffic away;
 * 2. the server stops accepting and waits for the requests in flight, at most `graceMs`;
 *    past that, the remaining connections are cut.
 * Closing the app also stops Apollo, the idempotency purge and the Redis client.
 *
 * @returns `clean` when every request finished within the grace period, else `timed-out`.
 */
export async function drainAndClose(
  app: FastifyInstance,
  state: ServiceState,
  { drainMs, graceMs }: { drainMs: number; graceMs: number },
): Promise<'clean' | 'timed-out'> {
  state.draining = true;
  if (drainMs > 0) await sleep(drainMs);
  let outcome: 'clean' | 'timed-out' = 'clean';
  const deadline = setTimeout(() => {
    outcome = 'timed-out';
    app.server.closeAllConnections();
  }, graceMs);
  try {
    await app.close();
  } finally {
    clearTimeout(deadline);
  }
  return outcome;
}
