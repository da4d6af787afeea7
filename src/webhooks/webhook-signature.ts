import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { WebhookSecret } from './webhook-endpoint.entity';
import { WEBHOOK_LIMITS } from '../limits';

/** A new signing secret in the Standard Webhooks form: `whsec_` and the base64 of {@link WEBHOOK_LIMITS.secretBytes} random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(WEBHOOK_LIMITS.secretBytes).toString('base64')}`;
}

/** The Standard Webhooks headers of one attempt. */
export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * Signs one attempt with the `standardwebhooks` library (Standard Webhooks "Signature scheme": HMAC-SHA256 over
 * `id.timestamp.body`): one `v1,…` signature per secret still valid at `at`, space-separated, so a receiver verifies
 * with either secret while a rotation overlaps.
 * @param id - the event's id, the same on every attempt; `at` - the attempt's time (whole seconds are sent).
 */
export function signDelivery(secrets: readonly WebhookSecret[], id: string, at: Date, body: string): SignedHeaders {
  const timestamp = new Date(Math.floor(at.getTime() / 1000) * 1000);
  const valid = secrets.filter((secret) => secret.expiresAt === null || Date.parse(secret.expiresAt) > at.getTime());
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp.getTime() / 1000),
    'webhook-signature': valid.map(({ secret }) => new Webhook(secret).sign(id, timestamp, body)).join(' '),
  };
}
