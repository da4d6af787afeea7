import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { LRUCache } from 'lru-cache';
import { In, IsNull, type Repository } from 'typeorm';
import type { Database } from '../database/database';
import { type DatabaseBudget, withinDeadline } from '../database/database-deadline';
import { ApiKey } from './api-key.entity';
import { type KeyKind, type Scope, formatKey, formatScopes, kindOfKeyText, parseOrigin, parseStoredScopes, scopesFor } from './api-key-policy';
import { API_KEY_CACHE, API_KEY_LIMITS } from '../limits';
import { validateInput } from '../validation/validate-input';
import { RevokeCredentialsInput } from './api-key.inputs';

/** The stored form of a key: its SHA-256, in hex (one-shot `hash`: no Hash object per request). */
function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** Makes a new key of `kind` (docs/api-keys.md "Format"); nothing is stored. */
export function generateApiKey(kind: KeyKind = 'secret'): string {
  return formatKey(kind, randomBytes(32).toString('base64url'));
}

/** Shape and checksum: a mistyped, truncated or kind-flipped key fails here, before any database lookup. */
export function isWellFormedApiKey(key: string): boolean {
  return kindOfKeyText(key) !== null;
}

/** What the guard needs of an active key, read once from its row and cached with it. */
export interface Credential {
  readonly id: number;
  readonly kind: KeyKind;
  readonly scopes: ReadonlySet<Scope>;
  /** Allowed browser origins (publishable keys); null: any. */
  readonly origins: ReadonlySet<string> | null;
  /** Null: never. */
  readonly expiresAt: Date | null;
  /** Per rate-limit window; null: RATE_LIMIT_MAX. */
  readonly rateLimit: number | null;
  /** Whose rate-limit counter it spends: a rolled key shares its predecessor's. */
  readonly budgetKeyId: number;
}

function credentialOf(row: ApiKey): Credential {
  return {
    id: row.id,
    kind: row.kind,
    scopes: parseStoredScopes(row.scopes),
    origins: row.origins ? new Set(row.origins.split(' ')) : null,
    expiresAt: row.expiresAt,
    rateLimit: row.rateLimit,
    budgetKeyId: row.budgetKeyId ?? row.id,
  };
}

/** Whether `credential` has expired at `now` (ms): read from the row, so every instance agrees at the same instant. */
export function hasExpired(credential: Pick<Credential, 'expiresAt'>, now = Date.now()): boolean {
  return credential.expiresAt !== null && credential.expiresAt.getTime() <= now;
}

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
 * Where an ApiKeyService announces the keys it changed (revoked, or their expiry moved by a roll), so that other
 * processes forget them (docs/api-keys.md "Revocation"): KeyChangeChannel, through Redis.
 */
export interface KeyChangeAnnouncer {
  /** Tells the other processes to forget keys `ids`; resolves once sent, and never rejects (a failure is the announcer's to log). */
  announce(ids: readonly number[]): Promise<void>;
}

/** Called with the ids {@link ApiKeyService.forget} dropped; undefined: every key. */
export type ForgetListener = (ids: readonly number[] | undefined) => void;

interface FoundKey {
  credential: Credential;
  /** Date.now() when found or created. */
  checkedAt: number;
}

/** What this process knows of a presented key without asking the database. */
export type KeyRecognition =
  | { state: 'malformed' }
  /** Found active within the cache time (it may have expired since: see {@link hasExpired}). */
  | { state: 'trusted'; credential: Credential }
  /** Found active within API_KEY_CACHE.knownMs, but its answer has expired: look it up again, on the key's account. */
  | { state: 'known'; apiKeyId: number }
  /** Found unknown or revoked within the cache time. */
  | { state: 'refused' }
  | { state: 'unknown' };

/**
 * Creates, rolls, lists, revokes and checks API keys (spec "Authentication", docs/api-keys.md); only their SHA-256 hash
 * is stored. A change through this instance takes effect at once for whoever uses it (share it with the app:
 * AppDependencies.apiKeys); other instances see it when told ({@link forget}, through Redis) or within their cache time.
 */
export class ApiKeyService {
  /**
   * By the key's hex hash. Separate LRUs, so a flood of unknown keys cannot push real keys out.
   * `generation` counts changes, so a lookup that raced one caches nothing.
   */
  private readonly cache = {
    found: new LRUCache<string, FoundKey>({ max: API_KEY_CACHE.maxEntries, ttl: API_KEY_CACHE.knownMs }),
    refused: new LRUCache<string, true>({ max: API_KEY_CACHE.maxEntries, ttl: API_KEY_CACHE.ttlMs }),
    generation: 0,
  };
  /** Concurrent requests with one key share one lookup. */
  private readonly lookups = new Map<string, Promise<Credential | null>>();
  /** When this instance last wrote each key's `last_used_at` (Date.now()). */
  private readonly lastUseWrites = new LRUCache<number, number>({ max: API_KEY_CACHE.maxEntries });
  private readonly keys: Repository<ApiKey>;
  /** `forget` events, for what holds keys beyond this cache (open WebSockets). */
  private readonly forgetting = new EventEmitter<{ forget: [readonly number[] | undefined] }>();
  private announcer: KeyChangeAnnouncer | null = null;

  /**
   * @param options.cacheTtlMs - ms a lookup's answer is reused (0: never); bounds how late another process's change takes effect here
   *   when nothing tells this one.
   * @param options.onAuditError - a failed `last_used_at` write (the request it came from is not failed for it).
   */
  constructor(
    private readonly database: Database,
    private readonly options: { cacheTtlMs?: number; onAuditError?: (error: unknown) => void } = {},
  ) {
    this.keys = database.writer.getRepository(ApiKey);
  }

  private get ttlMs(): number {
    return this.options.cacheTtlMs ?? API_KEY_CACHE.ttlMs;
  }

  /**
   * Creates a key; `key` is not stored and cannot be shown again. A name alone makes a secret key with the defaults.
   * @throws RangeError for settings the key cannot have (one line, for the CLI).
   */
  async create(settings: NewKeySettings | string): Promise<{ apiKey: ApiKey; key: string }> {
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
    await this.keys.save(apiKey);
    this.remember(apiKey);
    return { apiKey, key };
  }

  /**
   * Rolls key `id`: a new key with its kind, scopes, origins, rate limit and lifetime, sharing its rate-limit budget;
   * the old one expires after `overlapMs` (or keeps its earlier expiry).
   * @returns null when no active key has that id.
   */
  async roll(id: number, overlapMs: number = API_KEY_LIMITS.defaultRollOverlapMs): Promise<{ apiKey: ApiKey; key: string; previous: ApiKey } | null> {
    const rolled = await this.keys.manager.transaction(async (manager) => {
      const keys = manager.getRepository(ApiKey);
      const previous = await keys.findOne({ where: { id, revokedAt: IsNull() }, lock: this.lockMode(manager) });
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
      return { apiKey, key, previous };
    });
    if (rolled) {
      this.forget([id]);
      this.remember(rolled.apiKey);
      await this.announcer?.announce([id]);
    }
    return rolled;
  }

  /** Every key, revoked ones included, by ascending id. */
  list(): Promise<ApiKey[]> {
    return this.keys.find({ order: { id: 'ASC' } });
  }

  /** Revokes a key, at once in this process, and announces it; false when no active key has that id. */
  async revoke(id: number): Promise<boolean> {
    const result = await this.keys.update({ id, revokedAt: IsNull() }, { revokedAt: new Date() });
    this.forget([id]);
    const revoked = (result.affected ?? 0) > 0;
    if (revoked) await this.announcer?.announce([id]);
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
    this.forget(revoked);
    if (revoked.length > 0) await this.announcer?.announce(revoked);
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

  /**
   * Announces, from now on, every key this service revokes or rolls to `announcer` (KeyChangeChannel with Redis);
   * null stops it. Set by whoever composes the process (app.ts, the apikey CLI).
   */
  announceChangesTo(announcer: KeyChangeAnnouncer | null): void {
    this.announcer = announcer;
  }

  /**
   * Calls `listener` after each {@link forget}, with the ids it dropped (undefined: all), until the returned function
   * is called: how open WebSockets hear that their key changed.
   */
  onForget(listener: ForgetListener): () => void {
    this.forgetting.on('forget', listener);
    return () => void this.forgetting.off('forget', listener);
  }

  /**
   * Drops what this process cached of keys `ids` (revoked or changed elsewhere), so their next use is looked up;
   * with no ids, drops every found key (the channel that announces changes was lost).
   */
  forget(ids?: readonly number[]): void {
    this.cache.generation++;
    if (ids === undefined) {
      this.cache.found.clear();
    } else {
      if (ids.length === 0) return;
      const wanted = new Set(ids);
      // Changes are rare, the scan is bounded.
      const hashes = [...this.cache.found.entries()].filter(([, found]) => wanted.has(found.credential.id)).map(([hex]) => hex);
      for (const hex of hashes) this.cache.found.delete(hex);
    }
    this.forgetting.emit('forget', ids);
  }

  /**
   * Which of `ids` are still active and unexpired, with their expiry (null: never), bypassing the cache: how open
   * WebSockets learn of another process's revocation or roll (docs/subscriptions.md).
   * @throws DatabaseDeadlineError (503) past the query's deadline.
   */
  async activeIds(ids: Iterable<number>): Promise<Map<number, Date | null>> {
    const wanted = [...new Set(ids)];
    if (wanted.length === 0) return new Map();
    const found = await withinDeadline(this.database, (manager) =>
      manager.getRepository(ApiKey).find({ select: { id: true, expiresAt: true }, where: { id: In(wanted), revokedAt: IsNull() } }),
    );
    return new Map(found.filter((row) => !hasExpired(row)).map((row) => [row.id, row.expiresAt]));
  }

  /** Lets the caller decide whose rate limit a lookup is charged to before making it (docs/security.md "Limits"). */
  recognise(key: string): KeyRecognition {
    if (!isWellFormedApiKey(key)) return { state: 'malformed' };
    const hex = hashKey(key);
    const found = this.cache.found.get(hex);
    if (found)
      return Date.now() - found.checkedAt < this.ttlMs ? { state: 'trusted', credential: found.credential } : { state: 'known', apiKeyId: found.credential.id };
    return this.cache.refused.has(hex) ? { state: 'refused' } : { state: 'unknown' };
  }

  /**
   * The unrevoked key a client presented (expired or not: see {@link hasExpired}), or null. Looked up by SHA-256 hash,
   * so the key never reaches the database and lookup timing says nothing about stored keys. A lookup runs within
   * `budget` (the request's) when given; requests for the same key while it runs share it.
   * @throws DatabaseDeadlineError (503) past the lookup's deadline.
   */
  async find(key: string, budget?: DatabaseBudget): Promise<Credential | null> {
    const recognised = this.recognise(key);
    if (recognised.state === 'trusted') return recognised.credential;
    if (recognised.state === 'malformed' || recognised.state === 'refused') return null;
    const hex = hashKey(key);
    const pending = this.lookups.get(hex);
    if (pending) return pending;
    const lookup = this.lookUp(hex, budget).finally(() => this.lookups.delete(hex));
    this.lookups.set(hex, lookup);
    return lookup;
  }

  /** {@link find}, for an unexpired key only. */
  async findActive(key: string, budget?: DatabaseBudget): Promise<Credential | null> {
    const found = await this.find(key, budget);
    return found && !hasExpired(found) ? found : null;
  }

  /** Requests that wait for it are charged to the key, not their address (docs/security.md "Limits"). */
  lookupUnderWay(key: string): Promise<unknown> | undefined {
    return isWellFormedApiKey(key) ? this.lookups.get(hashKey(key)) : undefined;
  }

  /** Records a use of key `id` in `last_used_at`, at most once per API_KEY_LIMITS.lastUsedWriteMs in this instance; never waits. */
  noteUse(id: number): void {
    const now = Date.now();
    const written = this.lastUseWrites.get(id);
    if (written !== undefined && now - written < API_KEY_LIMITS.lastUsedWriteMs) return;
    this.lastUseWrites.set(id, now);
    withinDeadline(this.database, (manager) => manager.getRepository(ApiKey).update({ id }, { lastUsedAt: new Date(now) })).catch((error: unknown) => {
      this.lastUseWrites.delete(id);
      this.options.onAuditError?.(error);
    });
  }

  private remember(apiKey: ApiKey): void {
    this.cache.refused.delete(apiKey.keyHash);
    this.cache.found.set(apiKey.keyHash, { credential: credentialOf(apiKey), checkedAt: Date.now() });
  }

  /** Row locks where the driver has them (MySQL); SQLite's one writer needs none. */
  private lockMode(manager: Repository<ApiKey>['manager']) {
    return manager.connection.driver.options.type === 'mysql' ? ({ mode: 'pessimistic_write' } as const) : undefined;
  }

  private async lookUp(hex: string, budget: DatabaseBudget | undefined): Promise<Credential | null> {
    const generation = this.cache.generation;
    const found = await withinDeadline(this.database, (manager) => manager.getRepository(ApiKey).findOneBy({ keyHash: hex, revokedAt: IsNull() }), {
      mode: 'slave',
      budget,
    });
    // Compared again: the database's collation may ignore case.
    const active = found && timingSafeEqual(Buffer.from(found.keyHash, 'hex'), Buffer.from(hex, 'hex')) ? credentialOf(found) : null;
    if (generation !== this.cache.generation) return active; // a change raced this lookup: cache nothing
    if (active) {
      this.cache.found.set(hex, { credential: active, checkedAt: Date.now() });
    } else {
      this.cache.found.delete(hex);
      if (this.ttlMs > 0) this.cache.refused.set(hex, true, { ttl: this.ttlMs });
    }
    return active;
  }
}
