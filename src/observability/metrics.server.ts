import fastify, { type FastifyInstance } from 'fastify';
import type { Metrics } from './metrics.registry';

/**
 * The Prometheus endpoint, on a listener of its own (`METRICS_PORT`, docs/operations.md "Endpoints") so
 * that it is never exposed through the public port or the load balancer: `GET /metrics` in the
 * text exposition format. Nothing else is served there.
 *
 * @param metrics - the registry to expose.
 * @returns a ready Fastify instance; call `listen()` on it.
 */
export async function buildMetricsServer(metrics: Metrics): Promise<FastifyInstance> {
  const server = fastify({ logger: false });
  server.get('/metrics', async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()));
  await server.ready();
  return server;
}
