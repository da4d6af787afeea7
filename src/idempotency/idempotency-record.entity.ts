import { Column, Entity, Generated, Index, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';
import { IDEMPOTENCY_LIMITS } from '../limits';

/** One create request made with an Idempotency-Key (table `idempotency_key`). */
@Entity({ name: 'idempotency_key' })
@Index('uq_idempotency_key', ['apiKeyId', 'key'], { unique: true })
@Index('idx_idempotency_created_at', ['createdAt'])
export class IdempotencyRecord {
  @PrimaryColumn({ type: 'bigint', transformer: int64Transformer })
  @Generated('increment')
  id!: number;

  @Column({ name: 'api_key_id', type: 'bigint', transformer: int64Transformer })
  apiKeyId!: number;

  @Column({ name: 'idempotency_key', type: 'varchar', length: IDEMPOTENCY_LIMITS.maxKeyLength })
  key!: string;

  /** SHA-256 (hex) of the validated input. */
  @Column({ name: 'request_hash', type: 'varchar', length: 64 })
  requestHash!: string;

  /** Null while the request is in flight. */
  @Column({ name: 'pet_id', type: 'bigint', nullable: true, transformer: int64Transformer })
  petId!: number | null;

  @Column({ name: 'created_at', type: 'datetime', precision: 6 })
  createdAt!: Date;
}
