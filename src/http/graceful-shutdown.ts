import { Server } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { ServiceState } from '../observability/service-state';

/**
 * Once the listener has stopped accepting, answers carry `Connection: close` so clients go
 * elsewhere rather than find their kept-alive connection closed under them. Not during the
 * drain: a reconnection then could sit in the kernel's accept queue and be reset.
 */
export function closeConnectionsOnceNotAccepting(app: FastifyInstance, state: ServiceState): void {
  app.addHook('onSend', (_request, reply, _payload, done) => {
    if (state.draining && !app.server.listening) reply.header('Connection', 'close');
    done();
  });
}

/**
 * Stops the app without resetting a connection it accepted (docs/operations.md "Signals"):
 * `/readyz` answers 503 for `drainMs`, then the listener stops accepting while what `state` was told to close then
 * (ServiceState.onStopAccepting: WebSockets, streams) closes, connections close as they finish; after `graceMs`
 * the rest are cut. Returns `timed-out` when a request had to be cut, else `clean`.
 */
export async function drainAndClose(
  app: FastifyInstance,
  state: ServiceState,
  { drainMs, graceMs }: { drainMs: number; graceMs: number },
): Promise<'clean' | 'timed-out'> {
  const drained = state.startDraining();
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
    const closed = new Promise<void>((resolve) => Server.prototype.close.call(server, () => resolve()));
    await state.stopAccepting();
    await closed;
    await drained;
    await app.close();
  } finally {
    clearTimeout(deadline);
  }
  return outcome;
}
