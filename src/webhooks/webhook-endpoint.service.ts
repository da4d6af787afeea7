import type { AuditActor, AuditTrail } from '../audit/audit-trail';
import type { Database } from '../database/database';
import { AppError } from '../errors/error-catalogue';
import { type AdminPage, adminPage } from '../validation/admin-page.inputs';
import { decodeIdCursor } from '../validation/opaque-cursor';
import { identifierOf } from '../validation/identifier-path.inputs';
import { validateInput } from '../validation/validate-input';
import type { WebhookSecret } from './webhook-endpoint.entity';
import {
  ListWebhookEndpointsArgs,
  NewWebhookEndpointInput,
  RotateWebhookSecretInput,
  WEBHOOK_ENDPOINTS_LIST,
  WebhookEndpointUpdateInput,
} from './webhook-endpoint.inputs';
import { type WebhookEndpointChange, WebhookEndpointRepository } from './webhook-endpoint.repository';
import { type WebhookEndpointView, webhookEndpointView } from './webhook-endpoint.view';
import { newWebhookSecret } from './webhook-signature';
import { type WebhookTargetRules, checkTarget, parseWebhookUrl } from './webhook-target.policy';

/** A stored endpoint's view and its signing secret (`whsec_…`), shown this once. */
export type CreatedWebhookEndpoint = WebhookEndpointView & { secret: string };

/** A rotation's answer: the new secret, shown this once, and until when the endpoint's previous secrets still sign. */
export interface RotatedWebhookSecret {
  id: number;
  secret: string;
  /** RFC 3339, UTC: the end of the overlap (not later than a previous secret's own end). */
  previousSecretsUntil: string;
}

/**
 * The operations on webhook endpoints (docs/admin.md "Webhook endpoints"), one implementation behind the REST API and the
 * `webhook` CLI. Each input is validated first (class-validator rules, then the URL's target rules, docs/webhooks.md
 * "Where deliveries may go"), so bad input changes nothing; each change is recorded in the audit trail in its own
 * transaction, and each refusal after it. Errors are AppErrors of the catalogue: BAD_USER_INPUT (with the rule's one-line
 * reason), NOT_FOUND; and DatabaseDeadlineError (503).
 */
export class WebhookEndpointService {
  private readonly endpoints: WebhookEndpointRepository;

  constructor(
    database: Database,
    private readonly rules: WebhookTargetRules,
    private readonly audit: AuditTrail,
  ) {
    this.endpoints = new WebhookEndpointRepository(database);
  }

  /**
   * createWebhookEndpoint, `webhook add`: stores an enabled endpoint whose deliveries start with the events after the
   * feed's current head.
   * @param input - `{url, status?, description?}` as sent (NewWebhookEndpointInput).
   * @returns its view and its signing secret, which is shown only here.
   * @throws AppError BAD_USER_INPUT: a violated rule, a URL whose form or target is refused, a host that does not resolve.
   */
  async create(input: unknown, actor: AuditActor): Promise<CreatedWebhookEndpoint> {
    return this.audit.refusing(actor, 'webhook_endpoint.create', null, async () => {
      const { url, status, description } = await validateInput(NewWebhookEndpointInput, input);
      const target = await this.checkedUrl(url);
      const secret = newWebhookSecret();
      const stored = await this.endpoints.add({ url: target, status: status ?? null, description: description ?? null, secret }, (manager, id) =>
        this.audit.record(manager, actor, 'webhook_endpoint.create', id),
      );
      return { ...webhookEndpointView(stored.endpoint, stored.head), secret };
    });
  }

  /**
   * listWebhookEndpoints, `webhook list`: a page of endpoints by ascending id (docs/admin.md "Paging").
   * @param query - `{limit?, after?}` as sent (ListWebhookEndpointsArgs).
   * @throws AppError BAD_USER_INPUT for a bad limit or cursor.
   */
  async list(query: unknown): Promise<AdminPage<WebhookEndpointView>> {
    const { limit, after } = await validateInput(ListWebhookEndpointsArgs, query);
    const afterId = after === undefined ? undefined : decodeIdCursor(WEBHOOK_ENDPOINTS_LIST, after);
    const { endpoints, head } = await this.endpoints.page(afterId, limit + 1);
    return adminPage(
      WEBHOOK_ENDPOINTS_LIST,
      endpoints.map((endpoint) => webhookEndpointView(endpoint, head)),
      limit,
    );
  }

  /**
   * getWebhookEndpoint: the endpoint's view.
   * @param id - its id, as sent in the path or as the CLI parsed it.
   * @throws AppError BAD_USER_INPUT for an id that is not a positive integer; NOT_FOUND when there is none with it.
   */
  async get(id: unknown): Promise<WebhookEndpointView> {
    const known = await identifierOf(id);
    const found = await this.endpoints.find(known);
    if (!found) throw webhookEndpointNotFound(known);
    return webhookEndpointView(found.endpoint, found.head);
  }

  /**
   * updateWebhookEndpoint, `webhook enable`: changes what `patch` names, JSON Merge Patch style (absent: unchanged;
   * `status` or `description` null: cleared); a new URL is checked as on create; `enabled` true resumes a disabled
   * endpoint from its cursor, false disables it (docs/admin.md "Webhook endpoints").
   * @param patch - WebhookEndpointUpdateInput as sent.
   * @returns the endpoint's view after the change.
   * @throws AppError BAD_USER_INPUT (nothing is changed); NOT_FOUND.
   */
  async update(id: unknown, patch: unknown, actor: AuditActor): Promise<WebhookEndpointView> {
    return this.audit.refusing(actor, 'webhook_endpoint.update', id, async () => {
      const known = await identifierOf(id);
      const { url, status, description, enabled } = await validateInput(WebhookEndpointUpdateInput, patch);
      const change: WebhookEndpointChange = { status, description, enabled, ...(url !== undefined && { url: await this.checkedUrl(url) }) };
      const updated = await this.endpoints.update(known, change, (manager) => this.audit.record(manager, actor, 'webhook_endpoint.update', known));
      if (!updated) throw webhookEndpointNotFound(known);
      return webhookEndpointView(updated.endpoint, updated.head);
    });
  }

  /**
   * rotateWebhookEndpointSecret, `webhook rotate-secret`: gives the endpoint a new secret, which signs from now on; the
   * secrets it had keep signing for `overlap` seconds more (not past their own end), so receivers switch without a gap.
   * @param input - `{overlap?}` in seconds (RotateWebhookSecretInput; default 24 h).
   * @throws AppError BAD_USER_INPUT; NOT_FOUND.
   */
  async rotateSecret(id: unknown, input: unknown, actor: AuditActor, now = new Date()): Promise<RotatedWebhookSecret> {
    return this.audit.refusing(actor, 'webhook_endpoint.rotate_secret', id, async () => {
      const known = await identifierOf(id);
      const { overlap } = await validateInput(RotateWebhookSecretInput, input ?? {});
      const until = new Date(now.getTime() + overlap * 1000);
      const secret = newWebhookSecret();
      const rotate = (secrets: readonly WebhookSecret[]): WebhookSecret[] => [
        { secret, expiresAt: null },
        ...secrets
          .map(({ secret: old, expiresAt }) => ({
            secret: old,
            expiresAt: expiresAt !== null && Date.parse(expiresAt) < until.getTime() ? expiresAt : until.toISOString(),
          }))
          .filter(({ expiresAt }) => Date.parse(expiresAt) > now.getTime()),
      ];
      const rotated = await this.endpoints.rotateSecrets(known, rotate, (manager) =>
        this.audit.record(manager, actor, 'webhook_endpoint.rotate_secret', known),
      );
      if (!rotated) throw webhookEndpointNotFound(known);
      return { id: known, secret, previousSecretsUntil: until.toISOString() };
    });
  }

  /**
   * deleteWebhookEndpoint, `webhook remove`: no more deliveries to it.
   * @throws AppError BAD_USER_INPUT for a bad id; NOT_FOUND.
   */
  async delete(id: unknown, actor: AuditActor): Promise<void> {
    await this.audit.refusing(actor, 'webhook_endpoint.delete', id, async () => {
      const known = await identifierOf(id);
      if (!(await this.endpoints.remove(known, (manager) => this.audit.record(manager, actor, 'webhook_endpoint.delete', known))))
        throw webhookEndpointNotFound(known);
    });
  }

  /**
   * `url` normalised, once its form and every address of its host pass the rules (docs/webhooks.md "Where deliveries may go").
   * @throws AppError BAD_USER_INPUT with the rule's one-line reason (a WebhookTargetError's or WebhookLookupError's message).
   */
  private async checkedUrl(url: string): Promise<string> {
    try {
      const target = parseWebhookUrl(url, this.rules);
      await checkTarget(target, this.rules);
      return target.href;
    } catch (error) {
      if (error instanceof RangeError) throw new AppError('BAD_USER_INPUT', error.message);
      throw error;
    }
  }
}

/** The NOT_FOUND of every operation naming an endpoint that does not exist, its deliveries' included. */
export function webhookEndpointNotFound(id: number): AppError {
  return new AppError('NOT_FOUND', `No webhook endpoint has id ${id}.`);
}
