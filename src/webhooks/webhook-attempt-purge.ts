import type { FastifyInstance } from 'fastify';
import { WEBHOOK_LIMITS } from '../limits';
import type { WebhookAttemptRepository } from './webhook-attempt.repository';

/**
 * Keeps `webhook_attempt` bounded (docs/admin.md "Retention"): purges the attempts older than
 * WEBHOOK_LIMITS.attemptRetentionMs and all but the newest WEBHOOK_LIMITS.attemptsPerEndpoint of each endpoint (with the
 * finished recoveries past that age) when the app is ready, then every WEBHOOK_LIMITS.attemptPurgeEveryMs until it
 * closes. Every instance purges; the deletes are the same whoever runs them. A failure is logged at warn and waits for
 * the next round.
 */
export function purgeWebhookAttempts(app: FastifyInstance, attempts: WebhookAttemptRepository): void {
  const purge = () =>
    attempts
      .purge({ now: new Date(), maxAgeMs: WEBHOOK_LIMITS.attemptRetentionMs, maxPerEndpoint: WEBHOOK_LIMITS.attemptsPerEndpoint })
      .catch((error) => app.log.warn({ err: error }, 'webhooks: attempt purge failed'));
  const timer = setInterval(() => void purge(), WEBHOOK_LIMITS.attemptPurgeEveryMs).unref();
  app.addHook('onReady', async () => void (await purge()));
  app.addHook('onClose', async () => clearInterval(timer));
}
