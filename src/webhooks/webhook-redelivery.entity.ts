import { Column, Entity, Generated, Index, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';

/**
 * A redelivery asked for and not yet made (table `webhook_redelivery`, docs/admin.md "Redelivery"): the dispatcher holding
 * the endpoint's lease makes one attempt of the event and deletes the row in the transaction that records the attempt, so
 * the request survives a restart and is worked by whichever instance delivers to the endpoint.
 */
@Entity({ name: 'webhook_redelivery' })
@Index('idx_webhook_redelivery_endpoint', ['endpointId', 'id'])
export class WebhookRedelivery {
  @PrimaryColumn({ type: 'bigint', transformer: int64Transformer })
  @Generated('increment')
  id!: number;

  @Column({ name: 'endpoint_id', type: 'int' })
  endpointId!: number;

  @Column({ name: 'event_seq', type: 'bigint', transformer: int64Transformer })
  eventSeq!: number;

  /** Node's clock, UTC. */
  @Column({ name: 'requested_at', type: 'datetime', precision: 3 })
  requestedAt!: Date;
}
