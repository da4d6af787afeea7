import { hash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * What a key may do, defined once for REST, GraphQL over HTTP and the WebSocket (docs/api-keys.md "Kinds and scopes").
 * Scope names follow OAuth 2.0 (RFC 6749 §3.3): space-separated in storage and in `WWW-Authenticate`. The `…:admin`
 * scopes run the administration API (docs/admin.md): only a secret key may hold them, and none has them by default.
 */
export const SCOPES = ['pets:read', 'pets:write', 'keys:admin', 'webhooks:admin'] as const;

export type Scope = (typeof SCOPES)[number];

/** The two kinds of key: `secret` for servers, `publishable` for code shipped to browsers. */
export const KEY_KINDS = Object.freeze({
  secret: {
    prefix: 'pst_sk_',
    letter: 's',
    defaultScopes: ['pets:read', 'pets:write'],
    grantable: ['pets:read', 'pets:write', 'keys:admin', 'webhooks:admin'],
  },
  publishable: { prefix: 'pst_pk_', letter: 'p', defaultScopes: ['pets:read'], grantable: ['pets:read'] },
} as const satisfies Record<string, { prefix: string; letter: string; defaultScopes: readonly Scope[]; grantable: readonly Scope[] }>);

export type KeyKind = keyof typeof KEY_KINDS;

/**
 * The scope each operation needs: every REST operation (by operationId) and every root field. Anything missing is
 * refused. `public` lists the REST operations that take no key at all (they are outside the guard).
 */
export const OPERATION_SCOPES = Object.freeze({
  rest: {
    listPets: 'pets:read',
    getPet: 'pets:read',
    createPet: 'pets:write',
    listEvents: 'pets:read',
    /** The audit trail says who did what with keys and endpoints: the key administrator's to read (docs/admin.md "Audit trail"). */
    listAuditEvents: 'keys:admin',
    /** The administration of keys (docs/admin.md "API keys"). */
    createApiKey: 'keys:admin',
    listApiKeys: 'keys:admin',
    getApiKey: 'keys:admin',
    rollApiKey: 'keys:admin',
    revokeApiKey: 'keys:admin',
    /** An endpoint's deliveries (docs/admin.md "Delivery attempts", "Redelivery", "Recovery"). */
    listWebhookAttempts: 'webhooks:admin',
    createWebhookRedelivery: 'webhooks:admin',
    createWebhookRecovery: 'webhooks:admin',
    getWebhookRecovery: 'webhooks:admin',
    /** Webhook endpoints (docs/admin.md "Webhook endpoints"). */
    createWebhookEndpoint: 'webhooks:admin',
    listWebhookEndpoints: 'webhooks:admin',
    getWebhookEndpoint: 'webhooks:admin',
    updateWebhookEndpoint: 'webhooks:admin',
    rotateWebhookEndpointSecret: 'webhooks:admin',
    deleteWebhookEndpoint: 'webhooks:admin',
  },
  /** Revoking leaked keys needs no key (docs/api-keys.md "Revocation"). */
  public: ['revokeCredentials'],
  graphql: {
    Query: { pets: 'pets:read', petsConnection: 'pets:read', pet: 'pets:read', node: 'pets:read' },
    Mutation: { createPet: 'pets:write' },
    Subscription: { petCreated: 'pets:read', petEvents: 'pets:read' },
  },
} as const satisfies { rest: Record<string, Scope>; public: readonly string[]; graphql: Record<'Query' | 'Mutation' | 'Subscription', Record<string, Scope>> });

export type RootType = keyof typeof OPERATION_SCOPES.graphql;

/** The meta fields (`__typename`, `__schema`, `__type`) read only the schema: they need no scope. */
export function isMetaField(field: string): boolean {
  return field.startsWith('__');
}

/** The scope a REST operation needs; undefined for one the table lacks (refused). */
export function restOperationScope(operationId: string | undefined): Scope | undefined {
  return operationId === undefined ? undefined : (OPERATION_SCOPES.rest as Record<string, Scope>)[operationId];
}

/** The scope a root field needs; undefined for one the table lacks (refused). Meta fields: see {@link isMetaField}. */
export function rootFieldScope(root: RootType, field: string): Scope | undefined {
  return (OPERATION_SCOPES.graphql[root] as Record<string, Scope>)[field];
}

/** A key's scopes as stored and as the `scope` of RFC 6750: space-separated, in SCOPES order. */
export function formatScopes(scopes: Iterable<Scope>): string {
  const held = new Set(scopes);
  return SCOPES.filter((scope) => held.has(scope)).join(' ');
}

/** The scopes of a stored `scopes` column; unknown names are dropped (they grant nothing). */
export function parseStoredScopes(stored: string): ReadonlySet<Scope> {
  return new Set(SCOPES.filter((scope) => stored.split(' ').includes(scope)));
}

/**
 * Key format (docs/api-keys.md "Format"): `pst_sk_` or `pst_pk_`, 43 base64url characters of secret (32 random bytes),
 * 6 of CRC-32 over the kind letter and the secret, so a flipped kind letter fails the checksum. Keys made before kinds
 * existed are `pst_` + secret + CRC-32 of the secret alone, and are secret keys.
 */
const KEY_FORMAT = /^pst_(?:(sk|pk)_)?([A-Za-z0-9_-]{43})([A-Za-z0-9_-]{6})$/;

/** Matches secret keys (current and legacy) and never a publishable one: for secret scanners (docs/api-keys.md "Format"). */
export const SECRET_KEY_SCANNER = /(?<![A-Za-z0-9_-])pst_(?:sk_)?[A-Za-z0-9_-]{49}(?![A-Za-z0-9_-])/;

function checksum(text: string): string {
  const bytes = Buffer.allocUnsafe(4);
  bytes.writeUInt32BE(crc32(text));
  return bytes.toString('base64url');
}

/** A key's text from its kind and 43 characters of base64url secret. */
export function formatKey(kind: KeyKind, secret: string): string {
  const { prefix, letter } = KEY_KINDS[kind];
  return prefix + secret + checksum(letter + secret);
}

/** The kind a key's text claims, when its shape and checksum hold; null otherwise, before any database lookup. */
export function kindOfKeyText(key: string): KeyKind | null {
  const match = KEY_FORMAT.exec(key);
  if (match === null) return null;
  const [, tag, secret, sum] = match;
  if (tag === undefined) return sum === checksum(secret) ? 'secret' : null;
  const kind: KeyKind = tag === 'sk' ? 'secret' : 'publishable';
  return sum === checksum(KEY_KINDS[kind].letter + secret) ? kind : null;
}

/** Makes a new key of `kind` (docs/api-keys.md "Format"); nothing is stored. */
export function generateApiKey(kind: KeyKind = 'secret'): string {
  return formatKey(kind, randomBytes(32).toString('base64url'));
}

/** Shape and checksum: a mistyped, truncated or kind-flipped key fails here, before any database lookup. */
export function isWellFormedApiKey(key: string): boolean {
  return kindOfKeyText(key) !== null;
}

/** The stored form of a key: its SHA-256, in hex (one-shot `hash`: no Hash object per request). */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/**
 * The scopes a new key of `kind` gets: `requested` (default: the kind's defaults), all grantable to it.
 * @throws RangeError naming a scope that does not exist or that this kind cannot hold.
 */
export function scopesFor(kind: KeyKind, requested?: readonly string[]): Scope[] {
  const wanted = requested && requested.length > 0 ? requested : KEY_KINDS[kind].defaultScopes;
  const grantable: readonly string[] = KEY_KINDS[kind].grantable;
  for (const scope of wanted) {
    if (!(SCOPES as readonly string[]).includes(scope)) throw new RangeError(`unknown scope "${scope}": the scopes are ${SCOPES.join(', ')}`);
    if (!grantable.includes(scope)) throw new RangeError(`a ${kind} key cannot hold ${scope}: it may hold ${grantable.join(', ')}`);
  }
  return SCOPES.filter((scope) => wanted.includes(scope));
}

/**
 * An allowed browser origin of a publishable key, normalised as browsers send `Origin` (RFC 6454 §6.1): scheme, host,
 * and the port unless it is the scheme's default.
 * @throws RangeError unless `text` is an http(s) origin with nothing after the host and port.
 */
export function parseOrigin(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new RangeError(`"${text}" is not an origin: expected e.g. https://app.example.com`);
  }
  // The href, not search and hash: an empty query or fragment (`…com?`, `…com#`) leaves those empty but is not an origin.
  const bare = url.href === `${url.origin}/` && !text.endsWith('/');
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !bare) {
    throw new RangeError(`"${text}" is not an origin: expected scheme://host[:port], e.g. https://app.example.com`);
  }
  return url.origin;
}

const DURATION = /^([1-9][0-9]{0,5})([smhd])$/;
const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * A duration as the CLI takes it: a whole number with `s`, `m`, `h` or `d` (`90d`, `15m`).
 * @returns milliseconds.
 * @throws RangeError for anything else.
 */
export function parseDuration(text: string): number {
  const match = DURATION.exec(text);
  if (!match) throw new RangeError(`"${text}" is not a duration: expected a whole number with s, m, h or d, e.g. 90d`);
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}
