import { Column, Entity, Generated, Index, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';

/** Where a recovery stands (docs/admin.md "Recovery"). */
export type RecoveryState = 'queued' | 'running' | 'done' | 'failed';

/**
 * One recovery of an endpoint (table `webhook_recovery`, docs/admin.md "Recovery"): which failed events to resend (after
 * a feed position, or whose last attempt failed since a time, up to the feed's head when asked), and how far it has got.
 * Worked by the dispatcher holding the endpoint's lease, its own cursor moved in the transaction that records each
 * attempt, so a restart resumes it after the last event resent.
 */
@Entity({ name: 'webhook_recovery' })
@Index('idx_webhook_recovery_endpoint', ['endpointId', 'state'])
export class WebhookRecovery {
  @PrimaryColumn({ type: 'bigint', transformer: int64Transformer })
  @Generated('increment')
  id!: number;

  @Column({ name: 'endpoint_id', type: 'int' })
  endpointId!: number;

  /** `{"since": …}`: only events whose last attempt, failed, started at or after this time; null with `after`. */
  @Column({ name: 'since_at', type: 'datetime', precision: 3, nullable: true })
  since!: Date | null;

  /** `{"after": …}`: only events after this feed position; 0 with `since`. */
  @Column({ name: 'after_seq', type: 'bigint', transformer: int64Transformer })
  afterSeq!: number;

  /** The feed's head when it was asked for: no later event is resent. */
  @Column({ name: 'up_to_seq', type: 'bigint', transformer: int64Transformer })
  upToSeq!: number;

  @Column({ type: 'varchar', length: 16 })
  state!: RecoveryState;

  /** The last event it handled: it resumes after it. */
  @Column({ name: 'cursor_seq', type: 'bigint', transformer: int64Transformer })
  cursor!: number;

  /** Events to resend, counted when it started (and again on a resume, with those already handled). */
  @Column({ name: 'events_total', type: 'int', default: 0 })
  eventsTotal!: number;

  @Column({ type: 'int', default: 0 })
  sent!: number;

  @Column({ type: 'int', default: 0 })
  failed!: number;

  /** Why it failed (state `failed`); null otherwise. */
  @Column({ type: 'varchar', length: 200, nullable: true })
  reason!: string | null;

  /** Node's clock, UTC, as are the two below. */
  @Column({ name: 'requested_at', type: 'datetime', precision: 3 })
  requestedAt!: Date;

  @Column({ name: 'started_at', type: 'datetime', precision: 3, nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'finished_at', type: 'datetime', precision: 3, nullable: true })
  finishedAt!: Date | null;
}
