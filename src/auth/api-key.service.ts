import { type EntityManager, In, IsNull, MoreThan, type Repository } from 'typeorm';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { ApiKey } from './api-key.entity';
import { ApiKeyAuthenticator } from './api-key.authenticator';
import { type KeyKind, formatScopes, generateApiKey, hashKey, isWellFormedApiKey, parseOrigin, scopesFor } from './api-key-policy';
import { ApiKeyUsageRecorder } from './api-key-usage.recorder';
import { KeyChanges } from './key-changes';
import { API_KEY_CACHE, API_KEY_LIMITS } from '../limits';
import { validateInput } from '../validation/validate-input';
import { RevokeCredentialsInput } from './api-key.inputs';

/** What a new key is made with (CLI flags, docs/api-keys.md "Creating keys"). */
export interface NewKeySettings {
  name: string;
  kind?: KeyKind;
  /** Default: the kind's (secret: both; publishable: pets:read). */
  scopes?: readonly string[];
  /** Publishable keys only. */
  origins?: readonly string[];
  /** Lifetime in ms; null: no expiry (secret keys only). Default API_KEY_LIMITS.defaultLifetimeMs. */
  expiresInMs?: number | null;
  /** Requests per window; default RATE_LIMIT_MAX. */
  rateLimit?: number;
}

/**
 * Work done inside the transaction of a change to key `id` (AuditTrail.record): when it throws, the change rolls back.
 * `id` is the key created, or the key rolled or revoked.
 */
export type KeyChangeRecorder = (manager: EntityManager, id: number) => Promise<void>;

/** The columns of a new key from `settings`, checked. @throws RangeError with a one-line reason. */
function checkedSettings(settings: NewKeySettings, now: number) {
  const { name, kind = 'secret', origins = [], expiresInMs = API_KEY_LIMITS.defaultLifetimeMs, rateLimit } = settings;
  const most = API_KEY_LIMITS.nameMaxLength;
  if (name.trim().length === 0 || name.length > most) throw new RangeError(`name must be 1 to ${most} characters`);
  const scopes = scopesFor(kind, settings.scopes);
  if (origins.length > 0 && kind !== 'publishable') throw new RangeError('origins apply to publishable keys only');
  if (origins.length > API_KEY_LIMITS.maxOrigins) throw new RangeError(`at most ${API_KEY_LIMITS.maxOrigins} origins`);
  if (expiresInMs === null && kind !== 'secret') throw new RangeError('a publishable key must expire');
  if (expiresInMs !== null && !(Number.isSafeInteger(expiresInMs) && expiresInMs > 0)) throw new RangeError('the lifetime must be positive');
  if (rateLimit !== undefined && !(Number.isSafeInteger(rateLimit) && rateLimit > 0 && rateLimit <= 2 ** 31 - 1)) {
    throw new RangeError('the rate limit must be a positive integer');
  }
  const allowed = [...new Set(origins.map(parseOrigin))];
  return {
    name,
    kind,
    scopes: formatScopes(scopes),
    origins: allowed.length > 0 ? allowed.join(' ') : null,
    expiresAt: expiresInMs === null ? null : new Date(now + expiresInMs),
    rateLimit: rateLimit ?? null,
  };
}

/**
 * Issues and administers API keys (spec "Authentication", docs/api-keys.md): creates, rolls, lists and revokes them;
 * only their SHA-256 hash is stored. One per process, owning the parts every use of keys shares: `changes` (what
 * changed, here or elsewhere), `authentication` (which key a client presented, and its cache) and `usage` (`last_used_at`).
 * A change through it takes effect at once for whoever shares it (AppDependencies.apiKeys); other instances see it when
 * told (through Redis) or within their cache time.
 */
export class ApiKeyService {
  readonly changes = new KeyChanges();
  readonly authentication: ApiKeyAuthenticator;
  readonly usage: ApiKeyUsageRecorder;
  private readonly keys: Repository<ApiKey>;

  /**
   * @param options.cacheTtlMs - ms a lookup's answer is reused (0: never): ApiKeyAuthenticator's.
   * @param options.onAuditError - a failed `last_used_at` write (the request it came from is not failed for it).
   */
  constructor(
    private readonly database: Database,
    options: { cacheTtlMs?: number; onAuditError?: (error: unknown) => void } = {},
  ) {
    this.keys = database.writer.getRepository(ApiKey);
    this.authentication = new ApiKeyAuthenticator(database, this.changes, options.cacheTtlMs ?? API_KEY_CACHE.ttlMs);
    this.usage = new ApiKeyUsageRecorder(database, options.onAuditError);
  }

  /**
   * Creates a key; `key` is not stored and cannot be shown again. A name alone makes a secret key with the defaults.
   * @param recordChange - run in the INSERT's transaction (the audit record), with the new key's id.
   * @throws RangeError for settings the key cannot have (one line, for the CLI).
   */
  async create(settings: NewKeySettings | string, recordChange?: KeyChangeRecorder): Promise<{ apiKey: ApiKey; key: string }> {
    const now = Date.now();
    const columns = checkedSettings(typeof settings === 'string' ? { name: settings } : settings, now);
    const key = generateApiKey(columns.kind);
    const apiKey = this.keys.create({
      ...columns,
      keyHash: hashKey(key),
      keyHint: key.slice(-4),
      budgetKeyId: null,
      createdAt: new Date(now),
      lastUsedAt: null,
      revokedAt: null,
    });
    if (recordChange) {
      await this.keys.manager.transaction(async (manager) => {
        await manager.getRepository(ApiKey).save(apiKey);
        await recordChange(manager, apiKey.id);
      });
    } else {
      await this.keys.save(apiKey);
    }
    this.authentication.remember(apiKey);
    return { apiKey, key };
  }

  /**
   * Rolls key `id`: a new key with its kind, scopes, origins, rate limit and lifetime, sharing its rate-limit budget;
   * the old one expires after `overlapMs` (or keeps its earlier expiry).
   * @param recordChange - run in the roll's transaction (the audit record), with `id`.
   * @returns null when no active key has that id.
   */
  async roll(
    id: number,
    overlapMs: number = API_KEY_LIMITS.defaultRollOverlapMs,
    recordChange?: KeyChangeRecorder,
  ): Promise<{ apiKey: ApiKey; key: string; previous: ApiKey } | null> {
    const rolled = await this.keys.manager.transaction(async (manager) => {
      const keys = manager.getRepository(ApiKey);
      const previous = await keys.findOne({ where: { id, revokedAt: IsNull() }, lock: this.database.dialect.rowLock });
      if (!previous) return null;
      const now = Date.now();
      const key = generateApiKey(previous.kind);
      const lifetime = previous.expiresAt && previous.expiresAt.getTime() - previous.createdAt.getTime();
      const apiKey = keys.create({
        name: previous.name,
        kind: previous.kind,
        scopes: previous.scopes,
        origins: previous.origins,
        rateLimit: previous.rateLimit,
        budgetKeyId: previous.budgetKeyId ?? previous.id,
        createdAt: new Date(now),
        expiresAt: lifetime === null ? null : new Date(now + Math.max(lifetime, overlapMs)),
        keyHash: hashKey(key),
        keyHint: key.slice(-4),
        lastUsedAt: null,
        revokedAt: null,
      });
      await keys.save(apiKey);
      const end = new Date(now + overlapMs);
      if (previous.expiresAt === null || previous.expiresAt > end) {
        previous.expiresAt = end;
        await keys.update({ id }, { expiresAt: end });
      }
      await recordChange?.(manager, id);
      return { apiKey, key, previous };
    });
    if (rolled) {
      this.authentication.remember(rolled.apiKey);
      await this.changes.changed([id]);
    }
    return rolled;
  }

  /** Every key, revoked ones included, by ascending id. */
  list(): Promise<ApiKey[]> {
    return this.keys.find({ order: { id: 'ASC' } });
  }

  /**
   * Up to `limit` keys, revoked ones included, by ascending id, after id `afterId` (0: from the first).
   * @throws DatabaseDeadlineError (503) past the deadline.
   */
  page(afterId: number, limit: number): Promise<ApiKey[]> {
    return withinDeadline(this.database, (manager) =>
      manager.getRepository(ApiKey).find({ where: { id: MoreThan(afterId) }, order: { id: 'ASC' }, take: limit }),
    );
  }

  /**
   * Key `id`, revoked or not; null when none has it.
   * @throws DatabaseDeadlineError (503) past the deadline.
   */
  find(id: number): Promise<ApiKey | null> {
    return withinDeadline(this.database, (manager) => manager.getRepository(ApiKey).findOneBy({ id }));
  }

  /**
   * Revokes a key, at once in this process, and announces it; false when no active key has that id.
   * @param recordChange - run in the UPDATE's transaction (the audit record) when a key was revoked, with `id`.
   */
  async revoke(id: number, recordChange?: KeyChangeRecorder): Promise<boolean> {
    const revoked = await this.keys.manager.transaction(async (manager) => {
      const result = await manager.getRepository(ApiKey).update({ id, revokedAt: IsNull() }, { revokedAt: new Date() });
      const done = (result.affected ?? 0) > 0;
      if (done) await recordChange?.(manager, id);
      return done;
    });
    await this.changes.changed(revoked ? [id] : []);
    return revoked;
  }

  /**
   * Revokes whichever of `keys` (their text, as leaked) are active: malformed and unknown ones are ignored.
   * @returns the ids revoked, announced for other instances to forget.
   * @throws DatabaseDeadlineError (503) past the deadline.
   */
  async revokeLeaked(keys: readonly string[]): Promise<number[]> {
    const hashes = [...new Set(keys.filter(isWellFormedApiKey).map(hashKey))];
    if (hashes.length === 0) return [];
    const revoked = await withinDeadline(this.database, async (manager) => {
      const repository = manager.getRepository(ApiKey);
      const found = await repository.find({ select: { id: true, keyHash: true }, where: { keyHash: In(hashes), revokedAt: IsNull() } });
      // Compared again: the database's collation may ignore case.
      const ids = found.filter((row) => hashes.includes(row.keyHash)).map((row) => row.id);
      if (ids.length > 0) await repository.update({ id: In(ids), revokedAt: IsNull() }, { revokedAt: new Date() });
      return ids;
    });
    await this.changes.changed(revoked);
    return revoked;
  }

  /**
   * The credential revocation API's input (docs/api-keys.md "Revocation"), checked, then {@link revokeLeaked}.
   * @returns the ids revoked; what they were is not the caller's to tell anyone.
   * @throws AppError BAD_USER_INPUT for a body that is not `{"credentials": [1 to 100 strings]}`; DatabaseDeadlineError (503).
   */
  async revokeCredentials(body: unknown): Promise<number[]> {
    const { credentials } = await validateInput(RevokeCredentialsInput, body);
    return this.revokeLeaked(credentials);
  }
}
