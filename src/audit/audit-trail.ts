import type { EntityManager } from 'typeorm';
import type { Logger } from 'pino';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { AppError, toAppError } from '../errors/error-catalogue';
import { type AdminPage, adminPage } from '../validation/admin-page.inputs';
import { decodeIdCursor } from '../validation/opaque-cursor';
import { parsePositiveInteger } from '../validation/positive-integer';
import { validateInput } from '../validation/validate-input';
import { AUDIT_EVENTS_LIST, ListAuditEventsArgs } from './audit-event.inputs';
import { type AuditChannel, AuditEvent } from './audit-event.entity';

/** Every administration action, and the type of what it acts on: the `action` and `targetType` of an AuditEvent. */
export const AUDIT_ACTIONS = Object.freeze({
  'api_key.create': 'api_key',
  'api_key.roll': 'api_key',
  'api_key.revoke': 'api_key',
  'webhook_endpoint.create': 'webhook_endpoint',
  'webhook_endpoint.update': 'webhook_endpoint',
  'webhook_endpoint.rotate_secret': 'webhook_endpoint',
  'webhook_endpoint.delete': 'webhook_endpoint',
  'webhook_endpoint.redeliver': 'webhook_endpoint',
  'webhook_endpoint.recover': 'webhook_endpoint',
} as const);

export type AuditAction = keyof typeof AUDIT_ACTIONS;

/** Who asks for an administration action, and through which door. */
export interface AuditActor {
  channel: AuditChannel;
  /** The API key that asked; null through the CLI. */
  keyId: number | null;
  /** The request's id; null through the CLI. */
  requestId: string | null;
  /** The client's address; null through the CLI. */
  address: string | null;
}

/** The actor of every action taken through the CLIs (`npm run apikey`, `npm run webhook`). */
export const CLI_ACTOR: AuditActor = Object.freeze({ channel: 'cli', keyId: null, requestId: null, address: null });

/** An audit event as the API shows it (docs/admin.md "Audit trail"): ISO 8601 time; never a secret. */
export interface AuditEventView {
  id: number;
  occurredAt: string;
  channel: AuditChannel;
  actorKeyId: number | null;
  action: string;
  targetType: string;
  targetId: string | null;
  requestId: string | null;
  address: string | null;
  outcome: string;
}

function viewOf(event: AuditEvent): AuditEventView {
  const { id, channel, actorKeyId, action, targetType, targetId, requestId, address, outcome } = event;
  return { id, occurredAt: event.occurredAt.toISOString(), channel, actorKeyId, action, targetType, targetId, requestId, address, outcome };
}

/**
 * The audit trail of administration actions (table `audit_event`, docs/admin.md "Audit trail"), one per process, shared
 * by the API and the CLIs: a change is recorded in its own transaction ({@link record}), so none is made unrecorded; a
 * refusal is recorded after it ({@link refused}). Events are kept until an operator deletes them.
 */
export class AuditTrail {
  constructor(
    private readonly database: Database,
    private readonly log: Pick<Logger, 'warn'>,
  ) {}

  /**
   * Records `action` by `actor` on `targetId`, done, with `manager`: call it inside the transaction that makes the change.
   * @throws what the INSERT throws (the transaction then rolls back: no change without its record).
   */
  async record(manager: EntityManager, actor: AuditActor, action: AuditAction, targetId: string | number | null): Promise<void> {
    await manager.getRepository(AuditEvent).insert(this.row(actor, action, targetId, 'success'));
  }

  /**
   * Records that `action` by `actor` on `target` was refused with `error`: its catalogue code (NOT_FOUND…), and
   * BAD_USER_INPUT for a RangeError (a rule's one-line refusal, as the CLIs print it). A failure to record is logged at
   * warn, never thrown over the refusal.
   * @param target - the id of what was acted on, as sent: recorded when it is a positive integer, else null.
   */
  async refused(actor: AuditActor, action: AuditAction, target: unknown, error: unknown): Promise<void> {
    const outcome = error instanceof RangeError ? 'BAD_USER_INPUT' : toAppError(error).appError.code;
    const id = typeof target === 'number' ? target : typeof target === 'string' ? parsePositiveInteger(target) : undefined;
    try {
      await withinDeadline(this.database, (manager) => manager.getRepository(AuditEvent).insert(this.row(actor, action, id ?? null, outcome)));
    } catch (failure) {
      this.log.warn({ err: failure, action, targetId: id, outcome }, 'audit: a refused administration action could not be recorded');
    }
  }

  /**
   * Runs the administration action `work`, and records its refusal: a 4xx AppError, or a rule's RangeError, which is
   * thrown on as 400 BAD_USER_INPUT with its one-line message. A failure of the service (503…) is no refusal: nothing is
   * recorded, and it is thrown on as it is. The one wrapper of every administration operation, API and CLI alike.
   * @param target - the id of what is acted on, as sent: recorded when it is a positive integer, else null.
   * @returns what `work` returns.
   */
  async refusing<T>(actor: AuditActor, action: AuditAction, target: unknown, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      const refusal = error instanceof RangeError ? new AppError('BAD_USER_INPUT', error.message) : error;
      if (refusal instanceof AppError && refusal.status < 500) await this.refused(actor, action, target, refusal);
      throw refusal;
    }
  }

  /**
   * `listAuditEvents` (docs/admin.md "Audit trail"): newest first, keyset-paged on the id.
   * @param query - `{limit?, after?}` as the client sent it.
   * @throws AppError BAD_USER_INPUT for a bad limit or cursor; DatabaseDeadlineError (503).
   */
  async list(query: unknown): Promise<AdminPage<AuditEventView>> {
    const { limit, after } = await validateInput(ListAuditEventsArgs, query);
    const before = after === undefined ? undefined : decodeIdCursor(AUDIT_EVENTS_LIST, after);
    const rows = await withinDeadline(this.database, (manager) => {
      const select = manager
        .getRepository(AuditEvent)
        .createQueryBuilder('event')
        .orderBy('event.id', 'DESC')
        .limit(limit + 1);
      if (before !== undefined) select.where('event.id < :before', { before });
      return select.getMany();
    });
    return adminPage(AUDIT_EVENTS_LIST, rows.map(viewOf), limit);
  }

  private row(actor: AuditActor, action: AuditAction, targetId: string | number | null, outcome: string) {
    return {
      occurredAt: new Date(),
      channel: actor.channel,
      actorKeyId: actor.keyId,
      action,
      targetType: AUDIT_ACTIONS[action],
      targetId: targetId === null ? null : String(targetId),
      requestId: actor.requestId,
      address: actor.address,
      outcome,
    };
  }
}
