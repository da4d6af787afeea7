import { ArrayMaxSize, IsArray, IsDefined, IsIn, IsInt, IsString, Length, Max, Min, ValidateIf } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { KEY_KINDS, type KeyKind, SCOPES } from './api-key-policy';
import { AdminPageCursor, AdminPageSize } from '../validation/admin-page.inputs';
import { REQUIRED } from '../validation/property-rules';
import { ADMIN_LIMITS, API_KEY_LIMITS } from '../limits';

/** The list of API keys (opaque-cursor.ts encodeIdCursor). */
export const API_KEYS_LIST = 'api-keys';

/** The longest lifetime or overlap, in seconds: the CLI's longest duration (999999d), so every Date it makes is valid. */
export const MAX_DURATION_SECONDS = 999_999 * 86_400;

/** Absent is allowed; null is not (it would reach the service as a value): `IsOptional` would let null through. */
const unlessAbsent = () => ValidateIf((_object, value) => value !== undefined);

/**
 * Body of `POST /v1/admin/api-keys` (docs/admin.md "API keys"), the CLI's `apikey create` flags by name: the shape of
 * each field. The rules between fields (an origin only on a publishable key, the scopes a kind may hold, a publishable
 * key must expire) are ApiKeyService's, one place for both doors.
 */
export class NewApiKeyInput {
  @IsDefined(REQUIRED)
  @IsString()
  @Length(1, API_KEY_LIMITS.nameMaxLength, { message: `$property must be 1 to ${API_KEY_LIMITS.nameMaxLength} characters` })
  @JSONSchema({ description: 'Who or what the key is for.' })
  name!: string;

  @unlessAbsent()
  @IsIn(Object.keys(KEY_KINDS), { message: `$property must be one of: ${Object.keys(KEY_KINDS).join(', ')}` })
  @JSONSchema({ type: 'string', description: '`secret` (servers; the default) or `publishable` (browsers: read only, trusted documents).' })
  kind?: KeyKind;

  @unlessAbsent()
  @IsArray()
  @ArrayMaxSize(SCOPES.length)
  @IsString({ each: true })
  @JSONSchema({
    items: { type: 'string', enum: [...SCOPES] },
    description: "Default: the kind's (secret: `pets:read`, `pets:write`; publishable: `pets:read`). Only scopes the calling key holds.",
  })
  scopes?: string[];

  @unlessAbsent()
  @IsArray()
  @ArrayMaxSize(API_KEY_LIMITS.maxOrigins)
  @IsString({ each: true })
  @JSONSchema({ items: { type: 'string' }, description: 'Allowed browser origins of a publishable key, e.g. `https://app.example.com`.' })
  origins?: string[];

  @ValidateIf((_object, value) => value !== undefined && value !== null)
  @IsInt()
  @Min(1)
  @Max(MAX_DURATION_SECONDS)
  @JSONSchema({
    type: ['integer', 'null'],
    description: `Lifetime in seconds (default ${API_KEY_LIMITS.defaultLifetimeMs / 1000}, 90 days); null: never expires (secret keys only; discouraged).`,
  })
  expiresIn?: number | null;

  @unlessAbsent()
  @IsInt()
  @Min(1)
  @Max(2 ** 31 - 1)
  @JSONSchema({ description: 'Requests per rate-limit window (default RATE_LIMIT_MAX).' })
  rateLimit?: number;
}

/** Body of `POST /v1/admin/api-keys/{id}/roll` (docs/admin.md "API keys"), the CLI's `apikey roll --overlap`. */
export class RollApiKeyInput {
  @unlessAbsent()
  @IsInt()
  @Min(1)
  @Max(MAX_DURATION_SECONDS)
  @JSONSchema({ description: `Seconds the rolled key keeps working (default ${API_KEY_LIMITS.defaultRollOverlapMs / 1000}, 24 hours).` })
  overlap?: number;
}

/** Query of `GET /v1/admin/api-keys` (docs/admin.md "Paging"): ascending id. */
export class ListApiKeysArgs {
  @AdminPageSize()
  limit: number = ADMIN_LIMITS.listDefault;

  @AdminPageCursor(API_KEYS_LIST)
  after?: string;
}
