import fastify, { type FastifyInstance } from 'fastify';
import type { Metrics } from './metrics.registry';

/**
 * `GET /metrics`, on a listener of its own (`METRICS_PORT`) so that it is never exposed through the
 * public port (docs/operations.md "Endpoints"). Returns a ready instance; call `listen()` on it.
 * Its `close()` cuts every connection at once, a scrape in flight included: it runs after the app's grace period, and
 * Node stops timing a closing server's connections, so a scrape still arriving would otherwise hold the process until
 * SIGKILL (docs/operations.md "Signals").
 */
export async function buildMetricsServer(metrics: Metrics): Promise<FastifyInstance> {
  const server = fastify({ logger: false, forceCloseConnections: true });
  server.get('/metrics', async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  await server.ready();
  return server;
}
