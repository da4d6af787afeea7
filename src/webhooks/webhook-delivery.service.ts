import type { AuditActor, AuditTrail } from '../audit/audit-trail';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { AppError } from '../errors/error-catalogue';
import { PetFeedRepository } from '../events/pet-feed.repository';
import { decodeEventCursor, encodeEventCursor } from '../pets/pet-cursor';
import { type AdminPage, adminPage } from '../validation/admin-page.inputs';
import { decodeIdCursor } from '../validation/opaque-cursor';
import { validateInput } from '../validation/validate-input';
import type { AttemptTrigger, WebhookAttempt } from './webhook-attempt.entity';
import { WebhookAttemptRepository } from './webhook-attempt.repository';
import { ListWebhookAttemptsArgs, RecoveryInput, RedeliveryInput, WEBHOOK_ATTEMPTS_LIST, WebhookRecoveryPathArgs } from './webhook-delivery.inputs';
import { identifierOf } from '../validation/identifier-path.inputs';
import { WebhookEndpointRepository } from './webhook-endpoint.repository';
import { webhookEndpointNotFound } from './webhook-endpoint.service';
import type { RecoveryState, WebhookRecovery } from './webhook-recovery.entity';
import { WebhookResendRepository } from './webhook-resend.repository';

/** An attempt as the API shows it (docs/admin.md "Delivery attempts"): ISO 8601 time, the event by its id. */
export interface WebhookAttemptView {
  id: number;
  endpointId: number;
  eventId: string;
  attempt: number;
  trigger: AttemptTrigger;
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseBody: string | null;
}

/** A redelivery as the API shows it (docs/admin.md "Redelivery"). */
export interface WebhookRedeliveryView {
  id: number;
  endpointId: number;
  eventId: string;
  requestedAt: string;
}

/** A recovery as the API shows it (docs/admin.md "Recovery"). */
export interface WebhookRecoveryView {
  id: number;
  endpointId: number;
  since: string | null;
  after: string | null;
  upTo: string | null;
  state: RecoveryState;
  events: number;
  sent: number;
  failed: number;
  reason: string | null;
  requestedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

function attemptView(attempt: WebhookAttempt): WebhookAttemptView {
  const { id, endpointId, attempt: number, trigger, durationMs, statusCode, error, responseBody } = attempt;
  return {
    id,
    endpointId,
    eventId: encodeEventCursor(attempt.eventSeq),
    attempt: number,
    trigger,
    startedAt: attempt.startedAt.toISOString(),
    durationMs,
    statusCode,
    error,
    responseBody,
  };
}

function recoveryView(recovery: WebhookRecovery): WebhookRecoveryView {
  return {
    id: recovery.id,
    endpointId: recovery.endpointId,
    since: recovery.since?.toISOString() ?? null,
    after: recovery.since === null ? (recovery.afterSeq === 0 ? null : encodeEventCursor(recovery.afterSeq)) : null,
    upTo: recovery.upToSeq === 0 ? null : encodeEventCursor(recovery.upToSeq),
    state: recovery.state,
    events: recovery.eventsTotal,
    sent: recovery.sent,
    failed: recovery.failed,
    reason: recovery.reason,
    requestedAt: recovery.requestedAt.toISOString(),
    startedAt: recovery.startedAt?.toISOString() ?? null,
    finishedAt: recovery.finishedAt?.toISOString() ?? null,
  };
}

/**
 * The administration of webhook deliveries (docs/admin.md "Delivery attempts", "Redelivery", "Recovery"), knowing
 * neither HTTP nor GraphQL: it lists an endpoint's attempts, and queues redeliveries and recoveries in the database, each
 * with its audit event in one transaction. It sends nothing itself: the dispatcher holding the endpoint's lease does.
 */
export class WebhookDeliveryService {
  private readonly endpoints: WebhookEndpointRepository;
  private readonly attempts: WebhookAttemptRepository;
  private readonly resends: WebhookResendRepository;
  private readonly feed: PetFeedRepository;

  constructor(
    private readonly database: Database,
    private readonly audit: AuditTrail,
  ) {
    this.endpoints = new WebhookEndpointRepository(database);
    this.attempts = new WebhookAttemptRepository(database);
    this.resends = new WebhookResendRepository(database);
    this.feed = new PetFeedRepository(database);
  }

  /**
   * `listWebhookAttempts`: the attempts to endpoint `path.id`, newest first, keyset-paged on their id.
   * @param path - `{id}` as in the URL; `query` - `{limit?, after?, eventId?}` as the client sent it.
   * @throws AppError BAD_USER_INPUT for a bad id, limit, cursor or event id; NOT_FOUND for an unknown endpoint;
   *   DatabaseDeadlineError (503).
   */
  async listAttempts(path: unknown, query: unknown): Promise<AdminPage<WebhookAttemptView>> {
    const endpointId = await this.existingEndpoint(path);
    const { limit, after, eventId } = await validateInput(ListWebhookAttemptsArgs, query);
    const before = after === undefined ? undefined : decodeIdCursor(WEBHOOK_ATTEMPTS_LIST, after);
    const eventSeq = eventId === undefined ? undefined : decodeEventCursor(eventId);
    const rows = await this.attempts.list(endpointId, { limit: limit + 1, before, eventSeq });
    return adminPage(WEBHOOK_ATTEMPTS_LIST, rows.map(attemptView), limit);
  }

  /**
   * `createWebhookRedelivery`: queues one more attempt of event `body.eventId` to endpoint `path.id`, with its audit event
   * (`webhook_endpoint.redeliver`) in the same transaction; a refusal is audited too.
   * @throws AppError BAD_USER_INPUT for a bad id or body; NOT_FOUND for an unknown endpoint or an event past the feed's
   *   head; DatabaseDeadlineError (503).
   */
  async redeliver(actor: AuditActor, path: unknown, body: unknown): Promise<WebhookRedeliveryView> {
    return this.audit.refusing(actor, 'webhook_endpoint.redeliver', (path as { id?: unknown } | null)?.id, async () => {
      const endpointId = await this.existingEndpoint(path);
      const { eventId } = await validateInput(RedeliveryInput, body);
      const eventSeq = await this.pastEvent(eventId);
      const row = await withinDeadline(
        this.database,
        async (manager) => {
          const queued = await this.resends.queueRedelivery(manager, endpointId, eventSeq);
          await this.audit.record(manager, actor, 'webhook_endpoint.redeliver', endpointId);
          return queued;
        },
        { transaction: true },
      );
      return { id: row.id, endpointId, eventId, requestedAt: row.requestedAt.toISOString() };
    });
  }

  /**
   * `createWebhookRecovery`: queues a recovery of endpoint `path.id` (`{since}` or `{after}`, up to the feed's head now),
   * with its audit event (`webhook_endpoint.recover`) in the same transaction; a refusal is audited too.
   * @throws AppError BAD_USER_INPUT for a bad id or body; NOT_FOUND for an unknown endpoint or an `after` past the
   *   feed's head; DatabaseDeadlineError (503).
   */
  async recover(actor: AuditActor, path: unknown, body: unknown): Promise<WebhookRecoveryView> {
    return this.audit.refusing(actor, 'webhook_endpoint.recover', (path as { id?: unknown } | null)?.id, async () => {
      const endpointId = await this.existingEndpoint(path);
      const { since, after } = await validateInput(RecoveryInput, body);
      const afterSeq = after === undefined ? 0 : await this.pastEvent(after);
      const upToSeq = await this.feed.head();
      const row = await withinDeadline(
        this.database,
        async (manager) => {
          const queued = await this.resends.queueRecovery(manager, { endpointId, since: since === undefined ? null : new Date(since), afterSeq, upToSeq });
          await this.audit.record(manager, actor, 'webhook_endpoint.recover', endpointId);
          return queued;
        },
        { transaction: true },
      );
      return recoveryView(row);
    });
  }

  /**
   * `getWebhookRecovery`: recovery `path.recoveryId` of endpoint `path.id`, and how far it has got.
   * @throws AppError BAD_USER_INPUT for a bad id; NOT_FOUND when the endpoint has no such recovery; DatabaseDeadlineError (503).
   */
  async getRecovery(path: unknown): Promise<WebhookRecoveryView> {
    const { id, recoveryId } = await validateInput(WebhookRecoveryPathArgs, path);
    const recovery = await this.resends.recovery(Number(id), Number(recoveryId));
    if (!recovery) throw new AppError('NOT_FOUND', `Webhook endpoint ${id} has no recovery ${recoveryId}.`);
    return recoveryView(recovery);
  }

  /** The id of the endpoint `path.id` names. @throws AppError BAD_USER_INPUT, NOT_FOUND. */
  private async existingEndpoint(path: unknown): Promise<number> {
    const id = await identifierOf((path as { id?: unknown } | undefined)?.id);
    if (!(await this.endpoints.get(id))) throw webhookEndpointNotFound(id);
    return id;
  }

  /** The feed position of `eventId`, validated as an event id. @throws AppError NOT_FOUND when it is past the feed's head. */
  private async pastEvent(eventId: string): Promise<number> {
    const seq = decodeEventCursor(eventId)!;
    if (seq > (await this.feed.head())) throw new AppError('NOT_FOUND', `No event has id ${eventId} yet: it is past the feed's head.`);
    return seq;
  }
}
