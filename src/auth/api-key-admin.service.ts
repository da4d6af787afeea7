import type { AuditAction, AuditActor, AuditTrail } from '../audit/audit-trail';
import { CLI_ACTOR } from '../audit/audit-trail';
import { AppError } from '../errors/error-catalogue';
import { type AdminPage, adminPage } from '../validation/admin-page.inputs';
import { decodeIdCursor } from '../validation/opaque-cursor';
import { identifierOf } from '../validation/identifier-path.inputs';
import { validateInput } from '../validation/validate-input';
import { API_KEYS_LIST, ListApiKeysArgs, NewApiKeyInput, RollApiKeyInput } from './api-key-admin.inputs';
import type { ApiKey } from './api-key.entity';
import { type Scope, parseStoredScopes, scopesFor } from './api-key-policy';
import type { ApiKeyService, KeyChangeRecorder } from './api-key.service';

/** A key as the administration API and `apikey list --json` show it (docs/api-keys.md "Listing keys"): never its text or hash. */
export interface ApiKeyView {
  id: number;
  name: string;
  kind: ApiKey['kind'];
  scopes: string[];
  /** Allowed browser origins of a publishable key; empty: any. */
  origins: string[];
  /** ISO 8601, UTC, milliseconds. */
  createdAt: string;
  /** Null: never. */
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

/** A key just made (created or rolled): its view and its text, shown in this answer only. */
export type CreatedApiKey = ApiKeyView & { key: string };

/** The one view of a key, for both doors: ISO 8601 times, null where none; scopes and origins as arrays. */
export function apiKeyView(key: ApiKey): ApiKeyView {
  const iso = (date: Date | null) => date?.toISOString() ?? null;
  return {
    id: key.id,
    name: key.name,
    kind: key.kind,
    scopes: key.scopes.split(' ').filter(Boolean),
    origins: key.origins ? key.origins.split(' ') : [],
    createdAt: key.createdAt.toISOString(),
    expiresAt: iso(key.expiresAt),
    lastUsedAt: iso(key.lastUsedAt),
    revokedAt: iso(key.revokedAt),
  };
}

/** Who administers keys: for the audit trail, and what it may grant. */
export interface KeyAdministrator {
  actor: AuditActor;
  /** The scopes it may give a key (its own key's, docs/admin.md "API keys"); null: any (the CLI, which holds the database). */
  grants: ReadonlySet<Scope> | null;
}

/** The CLI (`npm run apikey`): recorded as channel `cli`, may grant every scope. */
export const CLI_ADMINISTRATOR: KeyAdministrator = Object.freeze({ actor: CLI_ACTOR, grants: null });

/** The answer of a roll: the new key, and the rolled one with its new expiry. */
export interface RolledApiKey {
  created: CreatedApiKey;
  previous: ApiKeyView;
}

const noActiveKey = (id: number | undefined) => new AppError('NOT_FOUND', `No active key has id ${id}.`);

/**
 * The administration of API keys (docs/admin.md "API keys"), one implementation behind both doors: the REST API under
 * `/v1/admin/api-keys` and the `apikey` CLI. Validates input once (the *.inputs.ts classes), applies "a key grants only
 * what it holds", and records every change in the audit trail in the change's own transaction, every refusal (400, 403,
 * 404) after it. Changes go through ApiKeyService, so they take effect and propagate (KeyChanges) as the CLI's always did.
 */
export class ApiKeyAdministration {
  constructor(
    private readonly apiKeys: ApiKeyService,
    private readonly audit: AuditTrail,
  ) {}

  /**
   * createApiKey: a new key from `body` (NewApiKeyInput: `{name, kind?, scopes?, origins?, expiresIn? (s, or null), rateLimit?}`).
   * @returns its view and its text, which is not stored.
   * @throws AppError BAD_USER_INPUT for a body the key cannot have; FORBIDDEN for a scope `by` does not hold (the
   *   kind's default scopes included); DatabaseDeadlineError (503).
   */
  create(by: KeyAdministrator, body: unknown): Promise<CreatedApiKey> {
    return this.audit.refusing(by.actor, 'api_key.create', null, async () => {
      const input = await validateInput(NewApiKeyInput, body);
      this.mayGrant(by, scopesFor(input.kind ?? 'secret', input.scopes));
      const { apiKey, key } = await this.apiKeys.create(
        {
          name: input.name,
          kind: input.kind,
          scopes: input.scopes,
          origins: input.origins,
          expiresInMs: input.expiresIn === undefined ? undefined : input.expiresIn === null ? null : input.expiresIn * 1000,
          rateLimit: input.rateLimit,
        },
        this.recorder(by, 'api_key.create'),
      );
      return { ...apiKeyView(apiKey), key };
    });
  }

  /**
   * listApiKeys: a page of keys, revoked ones included, by ascending id (docs/admin.md "Paging").
   * @param query - `{limit?, after?}` as the client sent it.
   * @throws AppError BAD_USER_INPUT for a bad limit or cursor; DatabaseDeadlineError (503).
   */
  async list(query: unknown): Promise<AdminPage<ApiKeyView>> {
    const { limit, after } = await validateInput(ListApiKeysArgs, query);
    const afterId = after === undefined ? 0 : decodeIdCursor(API_KEYS_LIST, after)!;
    const rows = await this.apiKeys.page(afterId, limit + 1);
    return adminPage(API_KEYS_LIST, rows.map(apiKeyView), limit);
  }

  /**
   * getApiKey: key `id`, revoked or not.
   * @throws AppError BAD_USER_INPUT for an id that is not a positive integer; NOT_FOUND when no key has it; DatabaseDeadlineError (503).
   */
  async get(id: string): Promise<ApiKeyView> {
    const key = await this.apiKeys.find(await identifierOf(id));
    if (!key) throw new AppError('NOT_FOUND', `No key has id ${id}.`);
    return apiKeyView(key);
  }

  /**
   * rollApiKey: a new key with key `id`'s kind, scopes, origins, rate limit and lifetime; the old one expires after
   * `overlap` seconds (RollApiKeyInput; default 24 h) or keeps its earlier expiry.
   * @param body - `{overlap?}`; absent: the defaults.
   * @throws AppError BAD_USER_INPUT; NOT_FOUND when no active key has the id; FORBIDDEN when the key holds a scope `by`
   *   does not (a roll would hand it over); DatabaseDeadlineError (503).
   */
  roll(by: KeyAdministrator, id: string, body: unknown): Promise<RolledApiKey> {
    return this.audit.refusing(by.actor, 'api_key.roll', id, async () => {
      const keyId = await identifierOf(id);
      const { overlap } = await validateInput(RollApiKeyInput, body ?? {});
      const current = await this.apiKeys.find(keyId);
      if (!current || current.revokedAt) throw noActiveKey(keyId);
      // A key's scopes never change, so what is checked here is what the roll copies.
      this.mayGrant(by, parseStoredScopes(current.scopes));
      const rolled = await this.apiKeys.roll(keyId, overlap === undefined ? undefined : overlap * 1000, this.recorder(by, 'api_key.roll'));
      if (!rolled) throw noActiveKey(keyId);
      return { created: { ...apiKeyView(rolled.apiKey), key: rolled.key }, previous: apiKeyView(rolled.previous) };
    });
  }

  /**
   * revokeApiKey: revokes key `id` at once, here and (announced through KeyChanges) on every instance.
   * @returns the key's view, `revokedAt` set.
   * @throws AppError BAD_USER_INPUT for a bad id; NOT_FOUND when no active key has it; DatabaseDeadlineError (503).
   */
  revoke(by: KeyAdministrator, id: string): Promise<ApiKeyView> {
    return this.audit.refusing(by.actor, 'api_key.revoke', id, async () => {
      const keyId = await identifierOf(id);
      if (!(await this.apiKeys.revoke(keyId, this.recorder(by, 'api_key.revoke')))) throw noActiveKey(keyId);
      const key = await this.apiKeys.find(keyId);
      return apiKeyView(key!);
    });
  }

  /** @throws AppError FORBIDDEN naming the scopes `by` may not grant. */
  private mayGrant(by: KeyAdministrator, scopes: Iterable<Scope>): void {
    if (by.grants === null) return;
    const missing = [...scopes].filter((scope) => !by.grants!.has(scope));
    if (missing.length > 0) {
      throw new AppError(
        'FORBIDDEN',
        `A key grants only scopes it holds: this key does not hold ${missing.join(', ')}, so it cannot give them to another key.`,
      );
    }
  }

  private recorder(by: KeyAdministrator, action: AuditAction): KeyChangeRecorder {
    return (manager, id) => this.audit.record(manager, by.actor, action, id);
  }
}
