import { Column, CreateDateColumn, Entity, Generated, Index, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';

/**
 * An API key (spec "Authentication"). Only the SHA-256 hash of the key is stored; the key
 * itself is shown once, when created.
 */
@Entity({ name: 'api_key' })
@Index('uq_api_key_key_hash', ['keyHash'], { unique: true })
export class ApiKey {
  @PrimaryColumn({ type: 'bigint', transformer: int64Transformer })
  @Generated('increment')
  id!: number;

  /** Who or what the key is for. */
  @Column({ type: 'varchar', length: 100 })
  name!: string;

  /** Hex SHA-256 of the whole key. */
  @Column({ name: 'key_hash', type: 'varchar', length: 64 })
  keyHash!: string;

  /** The last four characters of the key, to tell keys apart in listings. */
  @Column({ name: 'key_hint', type: 'varchar', length: 8 })
  keyHint!: string;

  @CreateDateColumn({ name: 'created_at', type: 'datetime', precision: 6 })
  createdAt!: Date;

  /** Set when revoked; a revoked key no longer authenticates. */
  @Column({ name: 'revoked_at', type: 'datetime', precision: 6, nullable: true })
  revokedAt!: Date | null;
}
