import type { FastifyInstance } from 'fastify';
import { IDEMPOTENCY_LIMITS } from '../limits';
import type { IdempotencyService } from './idempotency.service';

/** Purges expired keys when the app is ready, then periodically until it closes; a failure waits for the next round. */
export function purgeExpiredKeys(app: FastifyInstance, idempotency: IdempotencyService): void {
  const purge = () => idempotency.purgeExpired().catch((error) => app.log.warn({ err: error }, 'idempotency purge failed'));
  const timer = setInterval(() => void purge(), IDEMPOTENCY_LIMITS.purgeIntervalMs).unref();
  app.addHook('onReady', async () => void (await purge()));
  app.addHook('onClose', async () => clearInterval(timer));
}
