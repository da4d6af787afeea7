import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { restOperationScope } from '../auth/api-key-policy';
import { ERROR_CATALOGUE, type ErrorCode } from '../errors/error-catalogue';
import { ListEventsArgs } from '../events/pet-event.inputs';
import { ListAuditEventsArgs } from '../audit/audit-event.inputs';
import { AUDIT_ACTIONS } from '../audit/audit-trail';
import { ListApiKeysArgs, NewApiKeyInput, RollApiKeyInput } from '../auth/api-key-admin.inputs';
import { KEY_KINDS, SCOPES } from '../auth/api-key-policy';
import { PET_CREATED_EVENT } from '../events/pet-event.service';
import { formatEventFrame, formatRetryFrame } from '../following/sse.transport';
import { encodeEventCursor } from '../pets/pet-cursor';
import { PetStatus } from '../pets/pet-status.enum';
import { ListPetsArgs, NewPetInput, PetIdArgs } from '../pets/pet.inputs';
import { IDENTIFIER_SCHEMA } from '../validation/property-rules';
import { PET_FEED_LIMITS, PET_LIMITS, WEBHOOK_LIMITS } from '../limits';
import { ListWebhookAttemptsArgs, RecoveryInput, RedeliveryInput, WebhookRecoveryPathArgs } from '../webhooks/webhook-delivery.inputs';
import { ListWebhookEndpointsArgs, NewWebhookEndpointInput, RotateWebhookSecretInput, WebhookEndpointUpdateInput } from '../webhooks/webhook-endpoint.inputs';
import { OPERATOR_DISABLED } from '../webhooks/webhook-endpoint.entity';

/**
 * JSON Schemas of the REST contract, derived from the code that enforces it so there is no
 * second hand-written copy. Only the keywords this file reads are typed.
 */
interface Schema {
  [keyword: string]: unknown;
  type?: unknown;
  not?: Schema;
  default?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
}

/**
 * The schema of an input class as the validator applies it: defaults filled, unknown properties refused. The rules are
 * read at the call (routes are registered once), so every input class loaded by then is known, whatever the import order.
 * @throws Error for a class with no validation rules.
 */
export function inputSchema(type: new () => object): Schema {
  // Its SchemaObject comes from openapi3-ts, not a direct dependency.
  const fromRules = validationMetadatasToSchemas() as Record<string, Schema>;
  if (!fromRules[type.name]) throw new Error(`${type.name} has no validation rules to describe`);
  const schema = structuredClone(fromRules[type.name]);
  const defaults = new type() as Record<string, unknown>;
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    // @IsDefined adds `not: {type: null}`, which `type` already says.
    if (property.type && property.not?.type === 'null') delete property.not;
    if (defaults[name] !== undefined) property.default = defaults[name];
  }
  schema.required = (schema.required ?? []).filter((name) => defaults[name] === undefined);
  if (schema.required.length === 0) delete schema.required;
  schema.additionalProperties = false;
  return schema;
}

/**
 * As {@link inputSchema}, but defaults go in the description: openapi-typescript reads a `default`
 * in a component schema as "always present", so its clients could not omit `status` on create.
 */
function requestBodySchema(type: new () => object): Schema {
  const schema = inputSchema(type);
  for (const [name, { default: value, ...property }] of Object.entries(schema.properties ?? {})) {
    if (value === undefined) continue;
    const shown = typeof value === 'string' ? value : JSON.stringify(value);
    const description = [property.description, `Defaults to \`${shown}\` when omitted.`].filter(Boolean).join(' ');
    schema.properties![name] = { ...property, description };
  }
  return schema;
}

const newPet = requestBodySchema(NewPetInput);
/** NewPet's properties as a response sends them: always present, so no default to state. */
const petProperties = inputSchema(NewPetInput).properties ?? {};

/** Real values (checked against their schemas in tests), instead of what Swagger UI would generate from the patterns. */
export const OPENAPI_EXAMPLES = Object.freeze({
  newPet: { name: 'Rex', categoryId: 1, status: 'available' },
  pet: { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
  pets: [
    { id: 1, name: 'Rex', categoryId: 1, status: 'available' },
    { id: 2, name: 'Whiskers', categoryId: 2, status: 'pending' },
  ],
  events: [
    { id: encodeEventCursor(1), type: PET_CREATED_EVENT, pet: { id: 1, name: 'Rex', categoryId: 1, status: 'available' } },
    { id: encodeEventCursor(2), type: PET_CREATED_EVENT, pet: { id: 2, name: 'Whiskers', categoryId: 2, status: 'pending' } },
  ],
  auditEvent: {
    id: 42,
    occurredAt: '2026-11-28T09:00:00.000Z',
    channel: 'api',
    actorKeyId: 3,
    action: 'api_key.revoke',
    targetType: 'api_key',
    targetId: '17',
    requestId: '6f1c2a8e-3b7d-4e0a-9c55-1d2e3f4a5b6c',
    address: '203.0.113.7',
    outcome: 'success',
  },
} as const);

/** An API key as the administration API shows it (examples of ApiKey and CreatedApiKey; docs/admin.md "API keys"). */
const API_KEY_EXAMPLE = Object.freeze({
  id: 7,
  name: 'billing-service',
  kind: 'secret',
  scopes: ['pets:read', 'pets:write'],
  origins: [],
  createdAt: '2026-11-28T09:00:00.000Z',
  expiresAt: '2027-02-26T09:00:00.000Z',
  lastUsedAt: null,
  revokedAt: null,
});

/** What Swagger UI pre-fills for createApiKey and rollApiKey. */
const NEW_API_KEY_EXAMPLE = Object.freeze({ name: 'billing-service', scopes: ['pets:read', 'pets:write'], expiresIn: 7_776_000 });
const ROLL_API_KEY_EXAMPLE = Object.freeze({ overlap: 86_400 });

/** A key of the right shape that no database holds. */
const CREATED_API_KEY_EXAMPLE = Object.freeze({ ...API_KEY_EXAMPLE, key: 'pst_sk_' + 'A'.repeat(43) + 'xxxxxx' });

/** The properties of ApiKey (docs/api-keys.md "Listing keys"), the fields of `apikey list --json`. */
const API_KEY_PROPERTIES: Record<string, Schema> = {
  id: { ...IDENTIFIER_SCHEMA, description: 'The key id.' },
  name: { type: 'string', description: 'Who or what the key is for.' },
  kind: { type: 'string', enum: Object.keys(KEY_KINDS) },
  scopes: { type: 'array', items: { type: 'string', enum: [...SCOPES] } },
  origins: { type: 'array', items: { type: 'string' }, description: 'Allowed browser origins of a publishable key; empty: any.' },
  createdAt: { type: 'string', format: 'date-time' },
  expiresAt: { type: ['string', 'null'], format: 'date-time', description: 'Null: never.' },
  lastUsedAt: { type: ['string', 'null'], format: 'date-time', description: 'Written at most once a minute per instance; null: never used.' },
  revokedAt: { type: ['string', 'null'], format: 'date-time', description: 'Null: not revoked.' },
};

/** A webhook endpoint as the administration API shows it (WebhookEndpointView), for the examples below. */
const WEBHOOK_ENDPOINT_EXAMPLE = {
  id: 1,
  url: 'https://crm.example.com/hooks/pets',
  status: 'sold',
  description: 'CRM',
  createdAt: '2026-11-20T09:00:00.000Z',
  enabled: true,
  state: 'enabled',
  disabledReason: null,
  lastSuccessAt: '2026-11-27T14:03:12.418Z',
  lastFailureAt: null,
  consecutiveFailures: 0,
  nextAttemptAt: null,
  cursor: 42,
  lag: 0,
} as const;
/** An example secret of the Standard Webhooks form (never a real one). */
const WEBHOOK_SECRET_EXAMPLE = 'whsec_zZn9sxgpi03LOOmSZKV1AtunZkVyuqCRV/58LoGRhZo=';

/** The administration API's webhook endpoint examples (docs/admin.md "Webhook endpoints"). */
export const WEBHOOK_OPENAPI_EXAMPLES = Object.freeze({
  newWebhookEndpoint: { url: 'https://crm.example.com/hooks/pets', status: 'sold', description: 'CRM' },
  webhookEndpoint: WEBHOOK_ENDPOINT_EXAMPLE,
  webhookEndpoints: [
    WEBHOOK_ENDPOINT_EXAMPLE,
    {
      ...WEBHOOK_ENDPOINT_EXAMPLE,
      id: 2,
      url: 'https://old.example.com/hooks',
      status: null,
      description: null,
      enabled: false,
      state: 'disabled',
      disabledReason: 'retries exhausted',
      lastFailureAt: '2026-11-27T13:58:40.002Z',
      consecutiveFailures: 10,
      cursor: 17,
      lag: 25,
    },
  ],
  createdWebhookEndpoint: { ...WEBHOOK_ENDPOINT_EXAMPLE, lastSuccessAt: null, lag: 0, secret: WEBHOOK_SECRET_EXAMPLE },
  webhookEndpointUpdate: { status: null, enabled: true },
  webhookSecretRotation: { overlap: 7200 },
  rotatedWebhookSecret: { id: 1, secret: WEBHOOK_SECRET_EXAMPLE, previousSecretsUntil: '2026-11-27T16:03:12.418Z' },
} as const);

/**
 * WebhookEndpointUpdate's schema. `description`'s design type (`string | null`) is Object, which class-validator-jsonschema
 * reads as a nested class: its schema is NewWebhookEndpoint's, nullable.
 */
function webhookEndpointUpdateSchema(): Schema {
  const schema = inputSchema(WebhookEndpointUpdateInput);
  const { description } = inputSchema(NewWebhookEndpointInput).properties ?? {};
  schema.properties = {
    ...schema.properties,
    description: { ...description, type: ['string', 'null'], description: `${String(description?.description)} null: none.` },
  };
  return schema;
}

const describedNullableTime = (description: string) => ({ type: ['string', 'null'], format: 'date-time', description });

/** The properties of WebhookEndpoint, the view of webhook-endpoint.view.ts. */
const WEBHOOK_ENDPOINT_PROPERTIES: Record<string, Schema> = {
  id: { type: 'integer', minimum: 1, description: 'Assigned on creation.' },
  url: { type: 'string', description: 'Where events are POSTed, normalised (WHATWG URL).' },
  status: { type: ['string', 'null'], enum: [...Object.values(PetStatus), null], description: 'Only pets created with this status; null: every pet.' },
  description: { type: ['string', 'null'], maxLength: WEBHOOK_LIMITS.descriptionMaxLength },
  createdAt: { type: 'string', format: 'date-time' },
  enabled: { type: 'boolean', description: 'Whether it receives deliveries (`state` is `enabled`).' },
  state: { type: 'string', enum: ['enabled', 'disabled'] },
  disabledReason: {
    type: ['string', 'null'],
    description: `Why it is disabled: \`gone\` (it answered 410), \`retries exhausted\`, \`${OPERATOR_DISABLED}\`; null while enabled.`,
  },
  lastSuccessAt: describedNullableTime('The last delivery answered 2xx; null: none yet.'),
  lastFailureAt: describedNullableTime('The last attempt that failed; null: none yet.'),
  consecutiveFailures: { type: 'integer', minimum: 0, description: 'Attempts failed since the last success (or since it was enabled again).' },
  nextAttemptAt: describedNullableTime('When the retry of a failed event is due; null when none waits.'),
  cursor: { type: 'integer', minimum: 0, description: 'The feed position delivered last (or skipped by the filter): deliveries resume after it.' },
  lag: {
    type: 'integer',
    minimum: 0,
    description: "Feed positions behind the feed's head (the head minus `cursor`): 0 when caught up; a disabled endpoint's grows.",
  },
};

/** The same two events as an SSE stream that replays them. */
const EVENT_STREAM_EXAMPLE =
  formatRetryFrame(PET_FEED_LIMITS.retryMs) +
  OPENAPI_EXAMPLES.events.map((event) => formatEventFrame({ id: event.id, event: event.type, data: JSON.stringify(event) })).join('');

/** The spec's Error body for a catalogue code. */
export function errorExample(code: ErrorCode): { code: ErrorCode; message: string; status: number } {
  return { code, message: ERROR_CATALOGUE[code].message, status: ERROR_CATALOGUE[code].status };
}

/** Real values of the webhook delivery operations (docs/admin.md "Delivery attempts", "Redelivery", "Recovery"). */
export const WEBHOOK_DELIVERY_EXAMPLES = Object.freeze({
  attempt: {
    id: 42,
    endpointId: 1,
    eventId: encodeEventCursor(7),
    attempt: 2,
    trigger: 'delivery',
    startedAt: '2026-11-28T10:00:05.120Z',
    durationMs: 183,
    statusCode: 503,
    error: null,
    responseBody: '{"error":"maintenance"}',
  },
  timedOut: {
    id: 41,
    endpointId: 1,
    eventId: encodeEventCursor(7),
    attempt: 1,
    trigger: 'delivery',
    startedAt: '2026-11-28T10:00:00.002Z',
    durationMs: 15000,
    statusCode: null,
    error: 'timeout',
    responseBody: null,
  },
  redelivery: { id: 3, endpointId: 1, eventId: encodeEventCursor(7), requestedAt: '2026-11-28T10:30:00.000Z' },
  recovery: {
    id: 5,
    endpointId: 1,
    since: '2026-11-28T00:00:00.000Z',
    after: null,
    upTo: encodeEventCursor(120),
    state: 'running',
    events: 12,
    sent: 4,
    failed: 1,
    reason: null,
    requestedAt: '2026-11-28T10:30:00.000Z',
    startedAt: '2026-11-28T10:30:00.250Z',
    finishedAt: null,
  },
} as const);

const nullableTime = { type: ['string', 'null'], format: 'date-time' };
const eventIdSchema = { type: 'string', description: "The event's id (its feed cursor): the `webhook-id` of every attempt of it." };

/** The delivery operations' schemas, in SHARED_SCHEMAS. */
const WEBHOOK_DELIVERY_SCHEMAS: Schema[] = [
  {
    $id: 'WebhookAttempt',
    description: 'One POST of an event to an endpoint (docs/admin.md "Delivery attempts").',
    type: 'object',
    properties: {
      id: { ...IDENTIFIER_SCHEMA, description: 'Its order: a later attempt has a larger id.' },
      endpointId: { type: 'integer', minimum: 1 },
      eventId: eventIdSchema,
      attempt: {
        type: 'integer',
        minimum: 1,
        description: "1 for the event's first attempt by the feed's stream, n for its nth; 1 for a redelivery or recovery.",
      },
      trigger: { type: 'string', enum: ['delivery', 'redelivery', 'recovery'], description: "The feed's own stream, a redelivery, or a recovery." },
      startedAt: { type: 'string', format: 'date-time' },
      durationMs: { type: 'integer', minimum: 0, description: 'Connection to the end of the answer (or to the failure), in milliseconds.' },
      statusCode: { type: ['integer', 'null'], description: "The answer's HTTP status; null when there was no answer." },
      error: {
        type: ['string', 'null'],
        description:
          "Why there was no answer: `timeout`, `refused_target`, or the network error's code (`ECONNREFUSED`, `ENOTFOUND`…); null when there was one.",
      },
      responseBody: {
        type: ['string', 'null'],
        maxLength: WEBHOOK_LIMITS.attemptBodyBytes,
        description: `The answer body's first ${WEBHOOK_LIMITS.attemptBodyBytes} bytes, as UTF-8 text; null when there was no answer.`,
      },
    },
    required: ['id', 'endpointId', 'eventId', 'attempt', 'trigger', 'startedAt', 'durationMs', 'statusCode', 'error', 'responseBody'],
    additionalProperties: false,
    examples: [WEBHOOK_DELIVERY_EXAMPLES.attempt],
  },
  {
    $id: 'WebhookAttempts',
    description: 'A JSON array of WebhookAttempt, newest first.',
    type: 'array',
    items: { $ref: 'WebhookAttempt#' },
    examples: [[WEBHOOK_DELIVERY_EXAMPLES.attempt, WEBHOOK_DELIVERY_EXAMPLES.timedOut]],
  },
  {
    $id: 'NewWebhookRedelivery',
    description: 'Which event to send again (docs/admin.md "Redelivery").',
    ...inputSchema(RedeliveryInput),
    examples: [{ eventId: encodeEventCursor(7) }],
  },
  {
    $id: 'WebhookRedelivery',
    description: 'A redelivery queued: the dispatcher delivering to the endpoint makes one attempt of the event (docs/admin.md "Redelivery").',
    type: 'object',
    properties: {
      id: { ...IDENTIFIER_SCHEMA },
      endpointId: { type: 'integer', minimum: 1 },
      eventId: eventIdSchema,
      requestedAt: { type: 'string', format: 'date-time' },
    },
    required: ['id', 'endpointId', 'eventId', 'requestedAt'],
    additionalProperties: false,
    examples: [WEBHOOK_DELIVERY_EXAMPLES.redelivery],
  },
  {
    $id: 'NewWebhookRecovery',
    description: 'Which failed events to resend (docs/admin.md "Recovery"): `since` a time or `after` an event, exactly one.',
    ...recoveryInputSchema(),
    examples: [{ since: '2026-11-28T00:00:00Z' }],
  },
  {
    $id: 'WebhookRecovery',
    description: 'A recovery and how far it has got (docs/admin.md "Recovery").',
    type: 'object',
    properties: {
      id: { ...IDENTIFIER_SCHEMA },
      endpointId: { type: 'integer', minimum: 1 },
      since: { ...nullableTime, description: 'As asked; null when `after` was.' },
      after: { type: ['string', 'null'], description: 'As asked (an event id); null when `since` was.' },
      upTo: {
        type: ['string', 'null'],
        description: "The feed's head when it was asked for (an event id): no later event is resent; null when the feed was empty.",
      },
      state: { type: 'string', enum: ['queued', 'running', 'done', 'failed'] },
      events: { type: 'integer', minimum: 0, description: 'Events to resend: 0 while queued, counted when it starts.' },
      sent: { type: 'integer', minimum: 0, description: 'Resent and answered 2xx.' },
      failed: { type: 'integer', minimum: 0, description: 'Resent and failed (not retried: a later recovery may resend them).' },
      reason: { type: ['string', 'null'], description: 'Why it failed (state `failed`); null otherwise.' },
      requestedAt: { type: 'string', format: 'date-time' },
      startedAt: nullableTime,
      finishedAt: nullableTime,
    },
    required: ['id', 'endpointId', 'since', 'after', 'upTo', 'state', 'events', 'sent', 'failed', 'reason', 'requestedAt', 'startedAt', 'finishedAt'],
    additionalProperties: false,
    examples: [WEBHOOK_DELIVERY_EXAMPLES.recovery],
  },
];

/** RecoveryInput's schema: one of its two properties, neither required alone. */
function recoveryInputSchema(): Schema {
  const { required: _, ...schema } = inputSchema(RecoveryInput);
  return { ...schema, minProperties: 1, maxProperties: 1 };
}

export const SHARED_SCHEMAS: Schema[] = [
  { $id: 'NewPet', description: 'A new animal (spec "NewPet").', ...newPet, examples: [OPENAPI_EXAMPLES.newPet] },
  {
    $id: 'Pet',
    description: 'An animal of the store (spec "Pet"): every field of NewPet plus the id; all four are always sent.',
    type: 'object',
    properties: {
      id: { ...IDENTIFIER_SCHEMA, description: 'Assigned by the service on creation.' },
      ...Object.fromEntries(Object.entries(petProperties).map(([name, { default: _, ...rest }]) => [name, rest])),
    },
    required: ['id', ...Object.keys(petProperties)],
    additionalProperties: false,
    examples: [OPENAPI_EXAMPLES.pet],
  },
  { $id: 'Pets', description: 'A JSON array of Pet.', type: 'array', items: { $ref: 'Pet#' }, examples: [OPENAPI_EXAMPLES.pets] },
  {
    $id: 'Event',
    description:
      'One entry of the change feed (docs/events.md): a pet committed, at its place in the one feed order. More fields may be added; ignore those you do not know.',
    type: 'object',
    properties: {
      id: { type: 'string', description: 'The event cursor: resume after this event with `after=<id>` or `Last-Event-ID`. Opaque.' },
      type: { type: 'string', enum: [PET_CREATED_EVENT], description: 'What happened: `pet.created`.' },
      pet: { $ref: 'Pet#' },
    },
    required: ['id', 'type', 'pet'],
    examples: [OPENAPI_EXAMPLES.events[0]],
  },
  { $id: 'Events', description: 'A JSON array of Event, in feed order.', type: 'array', items: { $ref: 'Event#' }, examples: [OPENAPI_EXAMPLES.events] },
  {
    $id: 'AuditEvent',
    description: 'One administration action, done or refused (docs/admin.md "Audit trail"). Never a secret.',
    type: 'object',
    properties: {
      id: { ...IDENTIFIER_SCHEMA },
      occurredAt: { type: 'string', format: 'date-time' },
      channel: { type: 'string', enum: ['api', 'cli'], description: 'Through this API or the CLI.' },
      actorKeyId: { type: ['integer', 'null'], description: 'The API key that asked; null through the CLI.' },
      action: { type: 'string', enum: Object.keys(AUDIT_ACTIONS) },
      targetType: { type: 'string', enum: [...new Set(Object.values(AUDIT_ACTIONS))] },
      targetId: { type: ['string', 'null'], description: 'The id of the key or endpoint; null for a create that was refused.' },
      requestId: { type: ['string', 'null'], description: "The request's id (`X-Request-Id`); null through the CLI." },
      address: { type: ['string', 'null'], description: "The client's address; null through the CLI." },
      outcome: { type: 'string', description: '`success`, or the error code the action was refused with.' },
    },
    required: ['id', 'occurredAt', 'channel', 'actorKeyId', 'action', 'targetType', 'targetId', 'requestId', 'address', 'outcome'],
    additionalProperties: false,
    examples: [OPENAPI_EXAMPLES.auditEvent],
  },
  {
    $id: 'AuditEvents',
    description: 'A JSON array of AuditEvent, newest first.',
    type: 'array',
    items: { $ref: 'AuditEvent#' },
    examples: [[OPENAPI_EXAMPLES.auditEvent]],
  },
  ...WEBHOOK_DELIVERY_SCHEMAS,
  {
    $id: 'NewApiKey',
    description: 'A new API key (docs/admin.md "API keys"): the `apikey create` flags.',
    ...requestBodySchema(NewApiKeyInput),
    examples: [NEW_API_KEY_EXAMPLE],
  },
  {
    $id: 'ApiKey',
    description: 'An API key (docs/admin.md "API keys"): the fields of `apikey list --json`. Never its text or hash.',
    type: 'object',
    properties: API_KEY_PROPERTIES,
    required: Object.keys(API_KEY_PROPERTIES),
    additionalProperties: false,
    examples: [API_KEY_EXAMPLE],
  },
  { $id: 'ApiKeys', description: 'A JSON array of ApiKey, by ascending id.', type: 'array', items: { $ref: 'ApiKey#' }, examples: [[API_KEY_EXAMPLE]] },
  {
    $id: 'CreatedApiKey',
    description: 'A key just created or rolled: every field of ApiKey and `key`, its text, shown in this answer only (only its hash is stored).',
    type: 'object',
    properties: { ...API_KEY_PROPERTIES, key: { type: 'string', description: 'The key: send it as `Authorization: Bearer <key>`. Shown once.' } },
    required: [...Object.keys(API_KEY_PROPERTIES), 'key'],
    additionalProperties: false,
    examples: [CREATED_API_KEY_EXAMPLE],
  },
  {
    $id: 'RollApiKey',
    description: 'How a key is rolled (docs/admin.md "API keys"): `apikey roll --overlap`.',
    ...requestBodySchema(RollApiKeyInput),
    examples: [ROLL_API_KEY_EXAMPLE],
  },
  {
    $id: 'NewWebhookEndpoint',
    description: 'A new webhook endpoint (docs/admin.md "Webhook endpoints").',
    ...requestBodySchema(NewWebhookEndpointInput),
    examples: [WEBHOOK_OPENAPI_EXAMPLES.newWebhookEndpoint],
  },
  {
    $id: 'WebhookEndpoint',
    description: 'A webhook endpoint, its state and its health (docs/admin.md "Webhook endpoints"). Never its secrets. More fields may be added.',
    type: 'object',
    properties: WEBHOOK_ENDPOINT_PROPERTIES,
    required: Object.keys(WEBHOOK_ENDPOINT_PROPERTIES),
    additionalProperties: false,
    examples: [WEBHOOK_OPENAPI_EXAMPLES.webhookEndpoint],
  },
  {
    $id: 'WebhookEndpoints',
    description: 'A JSON array of WebhookEndpoint, by ascending id.',
    type: 'array',
    items: { $ref: 'WebhookEndpoint#' },
    examples: [WEBHOOK_OPENAPI_EXAMPLES.webhookEndpoints],
  },
  {
    $id: 'CreatedWebhookEndpoint',
    description: 'The stored endpoint and its signing secret, shown in this answer only.',
    type: 'object',
    properties: {
      ...WEBHOOK_ENDPOINT_PROPERTIES,
      secret: {
        type: 'string',
        pattern: '^whsec_[A-Za-z0-9+/]+=*$',
        description: 'The signing secret (Standard Webhooks: `whsec_` and base64): keep it, it is not shown again.',
      },
    },
    required: [...Object.keys(WEBHOOK_ENDPOINT_PROPERTIES), 'secret'],
    additionalProperties: false,
    examples: [WEBHOOK_OPENAPI_EXAMPLES.createdWebhookEndpoint],
  },
  {
    $id: 'WebhookEndpointUpdate',
    description:
      'The fields to change, JSON Merge Patch style (RFC 7396) in an `application/json` body: an absent field is unchanged; null clears `status` and `description`.',
    ...webhookEndpointUpdateSchema(),
    examples: [WEBHOOK_OPENAPI_EXAMPLES.webhookEndpointUpdate],
  },
  {
    $id: 'WebhookSecretRotation',
    description: 'How long the secrets the endpoint had keep signing beside the new one.',
    ...requestBodySchema(RotateWebhookSecretInput),
    examples: [WEBHOOK_OPENAPI_EXAMPLES.webhookSecretRotation],
  },
  {
    $id: 'RotatedWebhookSecret',
    description: 'The new signing secret, shown in this answer only, and the end of the overlap.',
    type: 'object',
    properties: {
      id: { type: 'integer', minimum: 1 },
      secret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]+=*$', description: 'The new signing secret: it signs every delivery from now on.' },
      previousSecretsUntil: { type: 'string', format: 'date-time', description: 'Until when the previous secrets sign too (RFC 3339, UTC).' },
    },
    required: ['id', 'secret', 'previousSecretsUntil'],
    additionalProperties: false,
    examples: [WEBHOOK_OPENAPI_EXAMPLES.rotatedWebhookSecret],
  },
  {
    $id: 'Error',
    description: 'Every error response (spec "Error").',
    type: 'object',
    properties: {
      code: { type: 'string', enum: Object.keys(ERROR_CATALOGUE), description: 'Machine-readable error code.' },
      message: { type: 'string', description: 'Human-readable description.' },
      status: { type: 'integer', description: 'The HTTP status code of the response.' },
    },
    required: ['code', 'message', 'status'],
    additionalProperties: false,
    examples: [errorExample('NOT_FOUND')],
  },
];

export const LIST_PETS_QUERY = inputSchema(ListPetsArgs);

export const LIST_EVENTS_QUERY = inputSchema(ListEventsArgs);

export const LIST_AUDIT_EVENTS_QUERY = inputSchema(ListAuditEventsArgs);
/** Query of listWebhookAttempts. */
export const LIST_WEBHOOK_ATTEMPTS_QUERY = inputSchema(ListWebhookAttemptsArgs);
/** Path of getWebhookRecovery. */
export const WEBHOOK_RECOVERY_PATH = inputSchema(WebhookRecoveryPathArgs);

export const LIST_API_KEYS_QUERY = inputSchema(ListApiKeysArgs);

/** Path parameters of an administration operation on one resource, `…/{id}` (IdentifierPath's rule); `description` says whose id. */
function idPathParams(description: string): Schema {
  return { type: 'object', properties: { id: { ...IDENTIFIER_SCHEMA, description } }, required: ['id'] };
}

/** Path parameters of `/admin/api-keys/{id}…`. */
export const API_KEY_ID_PARAMS = idPathParams('The key id.');

/** What the examples of the administration of keys hold (checked against their schemas in tests). */
export const API_KEY_EXAMPLES = Object.freeze({ apiKey: API_KEY_EXAMPLE, createdApiKey: CREATED_API_KEY_EXAMPLE });

export const LIST_WEBHOOK_ENDPOINTS_QUERY = inputSchema(ListWebhookEndpointsArgs);

/** Path parameters of the operations on one webhook endpoint. */
export const WEBHOOK_ENDPOINT_ID_PARAMS = idPathParams('Identifier of the webhook endpoint.');

/** listEvents' request header: where a reconnecting EventSource resumes. */
export const LAST_EVENT_ID_HEADER: Schema = {
  type: 'object',
  properties: {
    'Last-Event-ID': {
      type: 'string',
      pattern: '^[A-Za-z0-9_-]+$',
      maxLength: PET_LIMITS.cursorMaxLength,
      description:
        'SSE only: the `id` of the last event received; the stream resumes after it. Sent by EventSource when it reconnects; wins over `after`. 400 when not an event cursor.',
    },
  },
};

/** listEvents' 200: the page as JSON, or with `Accept: text/event-stream` the stream. */
export function eventsResponse(headers: Record<string, Schema>): Schema {
  return {
    description:
      'A JSON array of Event in feed order, with `Link` rel="next" always. With `Accept: text/event-stream`: an SSE stream (`retry:` first, then per ' +
      `event \`id:\` its cursor, \`event: ${PET_CREATED_EVENT}\`, \`data:\` the Event as JSON; a \`:\` comment at least every ${PET_FEED_LIMITS.heartbeatMs / 1000} s), ` +
      'replaying after `Last-Event-ID` or `after`, else from now, then live.',
    headers,
    content: {
      'application/json': { schema: { $ref: 'Events#' }, example: OPENAPI_EXAMPLES.events },
      'text/event-stream': { schema: { type: 'string', description: 'The WHATWG HTML event stream format.' }, example: EVENT_STREAM_EXAMPLE },
    },
  };
}

/** Path parameters of getPet: the REST name `petId` for PetIdArgs.id. */
export const PET_ID_PARAMS: Schema = {
  type: 'object',
  properties: { petId: { ...inputSchema(PetIdArgs).properties?.id, description: 'Identifier of the animal.' } },
  required: ['petId'],
};

/** Each is sent on every such response, unless its description begins "Only when". */
export const HEADERS = {
  WWW_AUTHENTICATE: { 'WWW-Authenticate': { type: 'string', description: 'RFC 6750 Bearer challenge.' } },
  INSUFFICIENT_SCOPE_CHALLENGE: {
    'WWW-Authenticate': {
      type: 'string',
      description:
        'Only when the key lacks the scope the operation needs: the RFC 6750 Bearer challenge ' +
        '`Bearer realm="pet-store", error="insufficient_scope", scope="<scope>"` names it.',
    },
  },
  LOCATION: { Location: { type: 'string', description: 'Path of the created Pet, /v1/pets/{id}.' } },
  IDEMPOTENT_REPLAYED: {
    'Idempotent-Replayed': {
      type: 'string',
      enum: ['true', 'false'],
      description:
        'Only when the create was sent with an Idempotency-Key: `true` when this answer replays the pet an earlier request stored, `false` when this request stored it.',
    },
  },
  RATE_LIMIT: {
    'RateLimit-Policy': { type: 'string', description: 'draft-ietf-httpapi-ratelimit-headers-10: `"default";q=<requests>;w=<seconds>`.' },
    RateLimit: { type: 'string', description: 'draft-ietf-httpapi-ratelimit-headers-10: `"default";r=<remaining>;t=<seconds to reset>`.' },
  },
  NEXT_PAGE_LINK: {
    Link: {
      type: 'string',
      description: 'Only when more pets follow. RFC 8288: `</v1/pets?limit=20&after=…>; rel="next"`, the next page with the same `limit` and `status`.',
    },
  },
  /** What http/conditional-get.hook.ts sends on the 200 and the 304 of a route that opts in. */
  CONDITIONAL: {
    ETag: {
      type: 'string',
      description:
        'RFC 9110 §8.8.3: the strong entity tag of this answer (its body and `Link`). Send it back in `If-None-Match` to be answered 304 while it is unchanged.',
    },
    'Cache-Control': {
      type: 'string',
      description: '`private, no-cache`: a browser may keep the answer, but must revalidate it (`If-None-Match`) before each use; no shared cache keeps it.',
    },
  },
  FEED_NEXT_LINK: {
    Link: {
      type: 'string',
      description:
        'JSON only, always: RFC 8288 `</v1/events?limit=20&after=…>; rel="next"`, after the last event of the page (an empty page repeats its `after`): follow it to poll.',
    },
  },
  RETRY_AFTER: { 'Retry-After': { type: 'integer', description: 'Seconds to wait before retrying.' } },
  API_KEY_EXPIRES: {
    'API-Key-Expires': {
      type: 'string',
      description: 'Only when the API key expires: when, as an RFC 9110 HTTP-date (`Thu, 25 Feb 2027 09:00:00 GMT`). Roll the key before then.',
    },
  },
} as const;

/**
 * A route's JSON response (`ref` e.g. `Pet#`). The example sits in the media type, not the schema:
 * a schema with `$ref` loses its other keywords in the OpenAPI document.
 */
export function jsonResponse(
  description: string,
  ref: string,
  example: { example: unknown } | { examples: Record<string, { summary: string; value: unknown }> },
  headers: Record<string, Schema> = {},
): Schema {
  return {
    description,
    ...(Object.keys(headers).length > 0 && { headers }),
    content: { 'application/json': { schema: { $ref: ref }, ...example } },
  };
}

/** The request headers of a route that opts in to conditional GET (http/conditional-get.hook.ts), for its `schema.headers`. */
export const CONDITIONAL_REQUEST_HEADERS: Schema = {
  type: 'object',
  properties: {
    'If-None-Match': {
      type: 'string',
      description:
        'RFC 9110 §13.1.2: entity tags from earlier `ETag`s (comma-separated, `W/` ignored) or `*`. When one matches the current answer: 304 with no body, ' +
        'and the request is not charged to the rate limit.',
    },
  },
};

/**
 * The 304 Not Modified (RFC 9110 §15.4.5) of a route that opts in to conditional GET: no body; `headers` are the 200's,
 * which the 304 carries too ({@link HEADERS}.CONDITIONAL among them).
 */
export function notModifiedResponse(headers: Record<string, Schema>): Record<304, Schema> {
  return {
    304: {
      // @fastify/swagger's mark of a response with no content.
      type: 'null',
      description:
        '`If-None-Match` matched the current `ETag`: nothing changed since, no body. Not charged to the rate limit; its `RateLimit` says what is left.',
      headers,
    },
  };
}

/** What a status's description says beyond its codes' catalogue messages. */
const STATUS_NOTES: Record<number, string> = {
  403:
    'Sent with `WWW-Authenticate: Bearer realm="pet-store", error="insufficient_scope", scope="<scope>"` (RFC 6750) when the key ' +
    'lacks the scope this operation needs (see its `security`); also when a publishable key may not be used from the ' +
    "request's `Origin` (then without `WWW-Authenticate`).",
};

/** The name of the API key security scheme in components.securitySchemes. */
export const SECURITY_SCHEME = 'bearerAuth';

/**
 * An operation's OpenAPI `security`: the API key scheme with the one scope the operation needs, read from the scope
 * table (api-key-policy.ts OPERATION_SCOPES.rest), so the document and the guard cannot disagree.
 * @throws Error for an operation the table lacks: every key would be refused it.
 */
export function operationSecurity(operationId: string): Array<Record<string, string[]>> {
  const scope = restOperationScope(operationId);
  if (scope === undefined) throw new Error(`OPERATION_SCOPES.rest has no entry for ${operationId}: no key could call it`);
  return [{ [SECURITY_SCHEME]: [scope] }];
}

/** A route's error responses, one per HTTP status, with an example per catalogue code; `headers` go on each. */
export function errorResponses(codes: ErrorCode[], headers: Record<string, Schema> = {}): Record<number, Schema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_CATALOGUE[code].status, [...(byStatus.get(ERROR_CATALOGUE[code].status) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, sameStatus]) => {
      const allHeaders = {
        ...(status === 401 ? HEADERS.WWW_AUTHENTICATE : {}),
        ...(status === 403 ? HEADERS.INSUFFICIENT_SCOPE_CHALLENGE : {}),
        ...(status === 429 ? { ...HEADERS.RETRY_AFTER, ...HEADERS.RATE_LIMIT } : {}),
        // Every code the catalogue gives a retryAfterSeconds is sent with Retry-After (AppError adds it).
        ...(sameStatus.some((code) => 'retryAfterSeconds' in ERROR_CATALOGUE[code]) ? HEADERS.RETRY_AFTER : {}),
        ...headers,
      };
      const description = [
        ...sameStatus.map((code) => `${code}: ${ERROR_CATALOGUE[code].message}`),
        ...(STATUS_NOTES[status] ? [STATUS_NOTES[status]] : []),
      ].join(' ');
      const example =
        sameStatus.length === 1
          ? { example: errorExample(sameStatus[0]) }
          : { examples: Object.fromEntries(sameStatus.map((code) => [code, { summary: code, value: errorExample(code) }])) };
      return [status, jsonResponse(description, 'Error#', example, allHeaders)];
    }),
  );
}
