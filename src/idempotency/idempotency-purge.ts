import type { FastifyInstance } from 'fastify';
import type { IdempotencyService } from './idempotency.service';

/**
 * Purges expired idempotency keys when the app is ready and then every hour, until it closes.
 * A failed purge is logged and tried again at the next hour.
 */
export function purgeHourly(app: FastifyInstance, idempotency: IdempotencyService): void {
  const purge = () => idempotency.purgeExpired().catch((error) => app.log.warn({ err: error }, 'idempotency purge failed'));
  // Fire and forget: `purge` logs its own failure, and the next tick is an hour away.
  const timer = setInterval(() => void purge(), 60 * 60 * 1000).unref();
  app.addHook('onReady', async () => void (await purge()));
  app.addHook('onClose', async () => clearInterval(timer));
}
