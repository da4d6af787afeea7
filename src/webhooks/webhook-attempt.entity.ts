import { Column, Entity, Generated, Index, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';

/** What made an attempt (docs/admin.md "Delivery attempts"): the feed's own stream, a redelivery, or a recovery. */
export type AttemptTrigger = 'delivery' | 'redelivery' | 'recovery';

/**
 * One POST of an event to an endpoint (table `webhook_attempt`, docs/admin.md "Delivery attempts"): when, how long, and
 * how it ended (an HTTP status, or an error class with no answer), with the first bytes of the answer. Written by the
 * dispatcher, one INSERT per attempt, in the transaction that records its effect; kept as docs/admin.md "Retention" says.
 */
@Entity({ name: 'webhook_attempt' })
@Index('idx_webhook_attempt_endpoint', ['endpointId', 'id'])
@Index('idx_webhook_attempt_event', ['endpointId', 'eventSeq', 'id'])
@Index('idx_webhook_attempt_started', ['startedAt'])
export class WebhookAttempt {
  @PrimaryColumn({ type: 'bigint', transformer: int64Transformer })
  @Generated('increment')
  id!: number;

  @Column({ name: 'endpoint_id', type: 'int' })
  endpointId!: number;

  /** The event's feed position: its `webhook-id` is encodeEventCursor(eventSeq). */
  @Column({ name: 'event_seq', type: 'bigint', transformer: int64Transformer })
  eventSeq!: number;

  /** 1 for an event's first attempt by the feed's stream, n for its nth; 1 for each redelivery or recovery attempt. */
  @Column({ type: 'int' })
  attempt!: number;

  /** `trigger` is a reserved word in MySQL. */
  @Column({ name: 'trigger_kind', type: 'varchar', length: 16 })
  trigger!: AttemptTrigger;

  /** Node's clock, UTC, to the millisecond, when the request started. */
  @Column({ name: 'started_at', type: 'datetime', precision: 3 })
  startedAt!: Date;

  /** Connection to the end of the answer (or to the failure), in whole milliseconds. */
  @Column({ name: 'duration_ms', type: 'int' })
  durationMs!: number;

  /** The answer's status; null when there was none. */
  @Column({ name: 'status_code', type: 'int', nullable: true })
  statusCode!: number | null;

  /** Why there was no answer: `timeout`, `refused_target`, or the network error's code (`ECONNREFUSED`…); null when there was one. */
  @Column({ type: 'varchar', length: 64, nullable: true })
  error!: string | null;

  /** The answer body's first bytes (WEBHOOK_LIMITS.attemptBodyBytes), as UTF-8 text; null when there was no answer. */
  @Column({ name: 'response_body', type: 'varchar', length: 1024, nullable: true })
  responseBody!: string | null;
}
