import { IsBoolean, IsDefined, IsEnum, IsInt, IsOptional, IsString, Max, Min, ValidateIf } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { MaxCodePoints, REQUIRED } from '../validation/property-rules';
import { PetStatus } from '../pets/pet-status.enum';
import { AdminPageCursor, AdminPageSize } from '../validation/admin-page.inputs';
import { ADMIN_LIMITS, WEBHOOK_LIMITS } from '../limits';

/** The list of webhook endpoints (opaque-cursor.ts encodeIdCursor). */
export const WEBHOOK_ENDPOINTS_LIST = 'webhook-endpoints';

const STATUSES = Object.values(PetStatus);
const STATUS_MESSAGE = { message: `$property must be one of: ${STATUSES.join(', ')}` };
const URL_DESCRIPTION =
  `Where events are POSTed: https (http only with WEBHOOK_ALLOW_HTTP=1), no user name or password, at most ${WEBHOOK_LIMITS.urlMaxLength} ` +
  'characters, a host resolving only to public addresses (docs/webhooks.md "Where deliveries may go").';
const DESCRIPTION_DESCRIPTION = `What the endpoint is for, at most ${WEBHOOK_LIMITS.descriptionMaxLength} characters.`;

/** A present value must not be null: for the PATCH fields that cannot be cleared. */
const unlessAbsent = <T extends object>(property: keyof T) => ValidateIf((input: T) => input[property] !== undefined);

/** Body of createWebhookEndpoint and of `webhook add` (docs/admin.md "Webhook endpoints"). */
export class NewWebhookEndpointInput {
  @IsDefined(REQUIRED)
  @IsString()
  @MaxCodePoints(WEBHOOK_LIMITS.urlMaxLength, { format: 'uri', description: URL_DESCRIPTION })
  url!: string;

  @IsOptional()
  @IsEnum(PetStatus, STATUS_MESSAGE)
  @JSONSchema({ description: 'Only the pets created with this status; every pet when omitted.' })
  status?: PetStatus;

  @IsOptional()
  @IsString()
  @MaxCodePoints(WEBHOOK_LIMITS.descriptionMaxLength, { description: DESCRIPTION_DESCRIPTION })
  description?: string;
}

/**
 * Body of updateWebhookEndpoint (docs/admin.md "Webhook endpoints"), as JSON Merge Patch (RFC 7396) reads it: an absent
 * field is unchanged; null clears `status` (every pet again) and `description`; `url` and `enabled` cannot be null.
 */
export class WebhookEndpointUpdateInput {
  @unlessAbsent<WebhookEndpointUpdateInput>('url')
  @IsString()
  @MaxCodePoints(WEBHOOK_LIMITS.urlMaxLength, {
    format: 'uri',
    description: `${URL_DESCRIPTION} Checked as on create; the cursor stays, and a retry that waits is made at once.`,
  })
  url?: string;

  @IsOptional()
  @IsEnum(PetStatus, STATUS_MESSAGE)
  @JSONSchema({ type: ['string', 'null'], enum: [...STATUSES, null], description: 'Only the pets created with this status from now on; null: every pet.' })
  status?: PetStatus | null;

  @IsOptional()
  @IsString()
  // Its schema: openapi.schemas.ts webhookEndpointUpdateSchema.
  @MaxCodePoints(WEBHOOK_LIMITS.descriptionMaxLength)
  description?: string | null;

  @unlessAbsent<WebhookEndpointUpdateInput>('enabled')
  @IsBoolean()
  @JSONSchema({
    description:
      'true re-enables a disabled endpoint: deliveries resume from its cursor, the event that failed first. false disables it ' +
      '(`disabledReason` "disabled by an operator"); its cursor stays.',
  })
  enabled?: boolean;
}

/** Body of rotateWebhookEndpointSecret and of `webhook rotate-secret` (docs/admin.md "Webhook endpoints"). */
export class RotateWebhookSecretInput {
  @IsInt()
  @Min(0)
  @Max(WEBHOOK_LIMITS.maxRotateOverlapMs / 1000)
  @JSONSchema({ description: 'Seconds the secrets the endpoint had keep signing beside the new one (not past their own end).' })
  overlap: number = WEBHOOK_LIMITS.defaultRotateOverlapMs / 1000;
}

/** Query of listWebhookEndpoints (docs/admin.md "Paging"): ascending id. */
export class ListWebhookEndpointsArgs {
  @AdminPageSize()
  limit: number = ADMIN_LIMITS.listDefault;

  @AdminPageCursor(WEBHOOK_ENDPOINTS_LIST)
  after?: string;
}
