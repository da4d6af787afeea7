import { Column, Entity, Generated, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';

/** Which door an administration action came through (docs/admin.md "Audit trail"). */
export type AuditChannel = 'api' | 'cli';

/**
 * One administration action, done or refused (table `audit_event`, docs/admin.md "Audit trail"): who (the key, or the
 * CLI), what, on what, when, from where, and how it ended. Never a secret: a key or a signing secret is named by its
 * id only. Written in the same transaction as the change it records.
 */
@Entity({ name: 'audit_event' })
export class AuditEvent {
  @PrimaryColumn({ type: 'bigint', transformer: int64Transformer })
  @Generated('increment')
  id!: number;

  /** Node's clock, UTC, to the millisecond. */
  @Column({ name: 'occurred_at', type: 'datetime', precision: 3 })
  occurredAt!: Date;

  @Column({ type: 'varchar', length: 8 })
  channel!: AuditChannel;

  /** The API key that asked (through the API); null through the CLI. */
  @Column({ name: 'actor_key_id', type: 'bigint', nullable: true, transformer: int64Transformer })
  actorKeyId!: number | null;

  /** e.g. `api_key.create`, `webhook_endpoint.rotate_secret` (AuditAction). */
  @Column({ type: 'varchar', length: 64 })
  action!: string;

  /** `api_key` or `webhook_endpoint`. */
  @Column({ name: 'target_type', type: 'varchar', length: 32 })
  targetType!: string;

  /** The target's id; null when there is none (a create that was refused). */
  @Column({ name: 'target_id', type: 'varchar', length: 64, nullable: true })
  targetId!: string | null;

  /** The request's id (`X-Request-Id`, the logs' `reqId`); null through the CLI. */
  @Column({ name: 'request_id', type: 'varchar', length: 128, nullable: true })
  requestId!: string | null;

  /** The client's address (TRUST_PROXY applied); null through the CLI. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  address!: string | null;

  /** `success`, or the error code the action was refused with (`NOT_FOUND`, `BAD_USER_INPUT`…). */
  @Column({ type: 'varchar', length: 64 })
  outcome!: string;
}
