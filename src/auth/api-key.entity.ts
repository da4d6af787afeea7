import { Column, CreateDateColumn, Entity, Generated, Index, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';
import { API_KEY_LIMITS } from '../limits';
import type { KeyKind } from './api-key-policy';

/** An API key (spec "Authentication", docs/api-keys.md): only its SHA-256 hash is stored. */
@Entity({ name: 'api_key' })
@Index('uq_api_key_key_hash', ['keyHash'], { unique: true })
export class ApiKey {
  @PrimaryColumn({ type: 'bigint', transformer: int64Transformer })
  @Generated('increment')
  id!: number;

  @Column({ type: 'varchar', length: API_KEY_LIMITS.nameMaxLength })
  name!: string;

  @Column({ name: 'key_hash', type: 'varchar', length: 64 })
  keyHash!: string;

  /** To tell keys apart in listings. */
  @Column({ name: 'key_hint', type: 'varchar', length: 8 })
  keyHint!: string;

  @Column({ type: 'varchar', length: 16, default: 'secret' })
  kind!: KeyKind;

  /** Space-separated (api-key-policy.ts SCOPES). */
  @Column({ type: 'varchar', length: 64, default: 'pets:read pets:write' })
  scopes!: string;

  /** Space-separated allowed browser origins of a publishable key; null: any. */
  @Column({ type: 'text', nullable: true })
  origins!: string | null;

  /** Requests per rate-limit window; null: RATE_LIMIT_MAX. */
  @Column({ name: 'rate_limit', type: 'int', nullable: true })
  rateLimit!: number | null;

  /** The key whose rate-limit budget this one spends: itself, or the first key of the roll it came from. */
  @Column({ name: 'budget_key_id', type: 'bigint', nullable: true, transformer: int64Transformer })
  budgetKeyId!: number | null;

  /** The service writes it; the column's default (the database's clock, whose session time zone may not be UTC) serves other inserts. */
  @CreateDateColumn({ name: 'created_at', type: 'datetime', precision: 6 })
  createdAt!: Date;

  /** Null: never (discouraged). */
  @Column({ name: 'expires_at', type: 'datetime', precision: 6, nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'last_used_at', type: 'datetime', precision: 6, nullable: true })
  lastUsedAt!: Date | null;

  @Column({ name: 'revoked_at', type: 'datetime', precision: 6, nullable: true })
  revokedAt!: Date | null;
}
