import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { WebhookEndpointRepository } from './webhook-endpoint.repository';

/** How one delivery attempt ended (the `outcome` label). */
export type DeliveryOutcome = 'success' | 'http_error' | 'gone' | 'timeout' | 'network_error' | 'refused_target';

/** Why an endpoint was disabled (the `reason` label). */
export type DisableReason = 'gone' | 'retries_exhausted';

/** The webhook deliveries' Prometheus metrics (docs/webhooks.md "Observing"). */
export interface WebhookMetrics {
  observeAttempt: (outcome: DeliveryOutcome, seconds: number) => void;
  countDisabled: (reason: DisableReason) => void;
}

/**
 * Registers the webhook metrics in `registry`: attempts by outcome and their duration, endpoints disabled, and each
 * endpoint's lag behind the feed's head, read from the database at each scrape (so every instance reports the same).
 */
export function createWebhookMetrics(registry: Registry, endpoints: Pick<WebhookEndpointRepository, 'lag'>): WebhookMetrics {
  const deliveries = new Counter({
    name: 'petstore_webhook_deliveries_total',
    help: 'Webhook delivery attempts by this instance, by outcome: success (2xx), http_error, gone (410), timeout, network_error, refused_target (a refused address).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'petstore_webhook_attempt_duration_seconds',
    help: 'Duration of webhook delivery attempts by this instance, from connection to the end of the answer.',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [registry],
  });
  const disabled = new Counter({
    name: 'petstore_webhook_endpoints_disabled_total',
    help: 'Webhook endpoints this instance disabled, by reason: gone (answered 410) or retries_exhausted (the last retry failed).',
    labelNames: ['reason'],
    registers: [registry],
  });
  new Gauge({
    name: 'petstore_webhook_lag_positions',
    help: "Each webhook endpoint's distance behind the change feed's head, in feed positions (0: caught up), read from the database at each scrape.",
    labelNames: ['endpoint'],
    registers: [registry],
    async collect() {
      this.reset();
      try {
        for (const { id, lag } of await endpoints.lag()) this.set({ endpoint: String(id) }, lag);
      } catch {
        // The database is away: no lag to report; the database metrics say why.
      }
    },
  });
  return {
    observeAttempt: (outcome, seconds) => {
      deliveries.inc({ outcome });
      duration.observe(seconds);
    },
    countDisabled: (reason) => disabled.inc({ reason }),
  };
}
