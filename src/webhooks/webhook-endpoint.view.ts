import type { PetStatus } from '../pets/pet-status.enum';
import type { WebhookEndpoint } from './webhook-endpoint.entity';

/**
 * A webhook endpoint as operators see it (docs/admin.md "Webhook endpoints"), through the API and `webhook list --json`
 * alike: its settings, its state and its health. Times are RFC 3339 UTC with milliseconds, null where none. Never a secret.
 */
export interface WebhookEndpointView {
  id: number;
  url: string;
  /** Only pets created with this status; null: every pet. */
  status: PetStatus | null;
  description: string | null;
  createdAt: string;
  /** Whether it receives deliveries: `state` is `enabled`. */
  enabled: boolean;
  state: 'enabled' | 'disabled';
  /** Why it is disabled (`gone`, `retries exhausted`, `disabled by an operator`); null while enabled. */
  disabledReason: string | null;
  /** The last delivery answered 2xx. */
  lastSuccessAt: string | null;
  /** The last attempt that failed. */
  lastFailureAt: string | null;
  /** Attempts failed since the last success (or since it was enabled again). */
  consecutiveFailures: number;
  /** When a retry is due; null when none waits. */
  nextAttemptAt: string | null;
  /** The feed position delivered last (or skipped, not matching the filter): deliveries resume after it. */
  cursor: number;
  /** Feed positions behind the feed's head (the head minus `cursor`): 0 when caught up. */
  lag: number;
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

/**
 * The view of `endpoint` (docs/admin.md "Webhook endpoints"), its lag counted from the feed's `head` (a feed position).
 * @returns a new plain object; never throws.
 */
export function webhookEndpointView(endpoint: WebhookEndpoint, head: number): WebhookEndpointView {
  return {
    id: endpoint.id,
    url: endpoint.url,
    status: endpoint.status,
    description: endpoint.description,
    createdAt: endpoint.createdAt.toISOString(),
    enabled: endpoint.state === 'enabled',
    state: endpoint.state,
    disabledReason: endpoint.disabledReason,
    lastSuccessAt: iso(endpoint.lastSuccessAt),
    lastFailureAt: iso(endpoint.lastFailureAt),
    consecutiveFailures: endpoint.failuresInRow,
    nextAttemptAt: iso(endpoint.nextAttemptAt),
    cursor: endpoint.cursor,
    lag: Math.max(0, head - endpoint.cursor),
  };
}
