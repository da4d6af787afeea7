import { IsDefined, IsOptional, IsRFC3339, IsString, ValidateBy, ValidateIf } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { decodeEventCursor } from '../pets/pet-cursor';
import { AdminPageCursor, AdminPageSize } from '../validation/admin-page.inputs';
import { IsIdentifier, REQUIRED } from '../validation/property-rules';
import { ADMIN_LIMITS } from '../limits';

/** The list of an endpoint's delivery attempts (opaque-cursor.ts encodeIdCursor). */
export const WEBHOOK_ATTEMPTS_LIST = 'webhook-attempts';

/** A feed event's id (its cursor, the `webhook-id` of its deliveries; docs/events.md "Cursors"). */
function IsEventId(): PropertyDecorator {
  const rule = ValidateBy({
    name: 'isEventId',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && decodeEventCursor(value) !== undefined,
      defaultMessage: () => '$property must be the id of a feed event (an event cursor, the webhook-id of its deliveries), unchanged',
    },
  });
  const schema = JSONSchema({
    type: 'string',
    pattern: '^[A-Za-z0-9_-]+$',
    description: "A feed event's id: its `id` in GET /v1/events, the `webhook-id` of its deliveries.",
  });
  return (target, property) => {
    rule(target, property);
    schema(target, property as string);
  };
}

/** Path of getWebhookRecovery: `/webhook-endpoints/{id}/recoveries/{recoveryId}`. */
export class WebhookRecoveryPathArgs {
  @IsDefined(REQUIRED)
  @IsIdentifier()
  id!: string;

  @IsDefined(REQUIRED)
  @IsIdentifier()
  recoveryId!: string;
}

/** Query of listWebhookAttempts (docs/admin.md "Delivery attempts"): newest first, of one event when `eventId` is given. */
export class ListWebhookAttemptsArgs {
  @AdminPageSize()
  limit: number = ADMIN_LIMITS.listDefault;

  @AdminPageCursor(WEBHOOK_ATTEMPTS_LIST)
  after?: string;

  @IsOptional()
  @IsString()
  @IsEventId()
  eventId?: string;
}

/** Body of createWebhookRedelivery (docs/admin.md "Redelivery"). */
export class RedeliveryInput {
  @IsDefined(REQUIRED)
  @IsString()
  @IsEventId()
  eventId!: string;
}

/** Body of createWebhookRecovery (docs/admin.md "Recovery"): `since` a time or `after` an event, exactly one. */
export class RecoveryInput {
  @ValidateIf((input: RecoveryInput) => input.after === undefined || input.since !== undefined)
  @IsDefined({ message: 'since or after is required' })
  @IsRFC3339({ message: '$property must be an RFC 3339 date-time, e.g. 2026-11-28T10:00:00Z' })
  @JSONSchema({ type: 'string', format: 'date-time', description: 'Resend the events whose last attempt failed at or after this time. Not with `after`.' })
  since?: string;

  @IsOptional()
  @IsString()
  @IsEventId()
  @ValidateBy({
    name: 'notWithSince',
    validator: {
      validate: (_value: unknown, args) => (args?.object as RecoveryInput).since === undefined,
      defaultMessage: () => 'after must not be sent with since: send one of them',
    },
  })
  @JSONSchema({ description: 'Resend the failed events after this feed event (its id). Not with `since`.' })
  after?: string;
}
