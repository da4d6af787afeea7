import { Column, CreateDateColumn, Entity, Generated, Index, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';
import { API_KEY_LIMITS } from '../limits';

/** An API key (spec "Authentication"): only its SHA-256 hash is stored. */
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

  @CreateDateColumn({ name: 'created_at', type: 'datetime', precision: 6 })
  createdAt!: Date;

  @Column({ name: 'revoked_at', type: 'datetime', precision: 6, nullable: true })
  revokedAt!: Date | null;
}
