import type { Database } from '../database/database';
import { PetStatus } from '../pets/pet-status.enum';
import type { WebhookEndpoint, WebhookSecret } from './webhook-endpoint.entity';
import { WebhookEndpointRepository } from './webhook-endpoint.repository';
import { newWebhookSecret } from './webhook-signature';
import { type WebhookTargetRules, WebhookTargetError, checkTarget, parseWebhookUrl } from './webhook-target.policy';
import { WEBHOOK_LIMITS } from '../limits';

/** What `webhook add` stores, unvalidated. */
export interface NewWebhookEndpoint {
  url: string;
  status?: string;
  description?: string;
}

/**
 * Webhook endpoints as operators manage them (docs/webhooks.md "Endpoints"): each change validated first, so bad input
 * changes nothing.
 */
export class WebhookEndpointService {
  private readonly endpoints: WebhookEndpointRepository;

  constructor(
    database: Database,
    private readonly rules: WebhookTargetRules,
  ) {
    this.endpoints = new WebhookEndpointRepository(database);
  }

  /**
   * Stores an endpoint whose deliveries start with the events after the feed's current head.
   * @returns its id and its signing secret (`whsec_…`), which is shown only here.
   * @throws WebhookTargetError (a RangeError): a URL that is not https (or http when allowed) or resolves to a refused
   * address; an unknown status; a description too long. WebhookLookupError (a RangeError): a host that does not resolve.
   */
  async add({ url, status, description }: NewWebhookEndpoint): Promise<{ id: number; secret: string }> {
    const target = parseWebhookUrl(url, this.rules);
    if (status !== undefined && !Object.values<string>(PetStatus).includes(status)) {
      throw new WebhookTargetError(`"${status}" is not a pet status: one of ${Object.values(PetStatus).join(', ')}`);
    }
    if (description !== undefined && [...description].length > WEBHOOK_LIMITS.descriptionMaxLength) {
      throw new WebhookTargetError(`a description may have at most ${WEBHOOK_LIMITS.descriptionMaxLength} characters`);
    }
    await checkTarget(target, this.rules);
    const secret = newWebhookSecret();
    const id = await this.endpoints.add({ url: target.href, status: (status as PetStatus | undefined) ?? null, description: description ?? null, secret });
    return { id, secret };
  }

  /** Every endpoint, by id. */
  list(): Promise<WebhookEndpoint[]> {
    return this.endpoints.list();
  }

  /** Deletes the endpoint; false when there is none with this id. */
  remove(id: number): Promise<boolean> {
    return this.endpoints.remove(id);
  }

  /** Enables a disabled endpoint; its deliveries resume from its cursor. False when there is none with this id. */
  enable(id: number): Promise<boolean> {
    return this.endpoints.enable(id);
  }

  /**
   * Gives the endpoint a new secret, which signs from now on; the secrets it had keep signing for `overlapMs` more (not
   * past their own end), so receivers can switch without a gap.
   * @returns the new secret, or null when there is no endpoint with this id.
   */
  async rotateSecret(id: number, overlapMs: number = WEBHOOK_LIMITS.defaultRotateOverlapMs, now = new Date()): Promise<{ secret: string; until: Date } | null> {
    const endpoint = await this.endpoints.get(id);
    if (!endpoint) return null;
    const until = new Date(now.getTime() + overlapMs);
    const kept: WebhookSecret[] = endpoint.secrets
      .map(({ secret, expiresAt }) => ({ secret, expiresAt: expiresAt !== null && Date.parse(expiresAt) < until.getTime() ? expiresAt : until.toISOString() }))
      .filter(({ expiresAt }) => Date.parse(expiresAt) > now.getTime());
    const secret = newWebhookSecret();
    if (!(await this.endpoints.setSecrets(id, [{ secret, expiresAt: null }, ...kept]))) return null;
    return { secret, until };
  }
}
