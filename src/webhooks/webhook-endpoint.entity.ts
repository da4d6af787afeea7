import { Column, Entity, Index, PrimaryGeneratedColumn, type ValueTransformer } from 'typeorm';
import { int64Transformer } from '../database/int64';
import type { PetStatus } from '../pets/pet-status.enum';
import { WEBHOOK_LIMITS } from '../limits';

/** One signing secret (`whsec_…`) of an endpoint; it stops signing at `expiresAt` (an ISO 8601 time), never when null. */
export interface WebhookSecret {
  secret: string;
  expiresAt: string | null;
}

/** Why an endpoint stopped receiving deliveries: its deliveries' verdicts. */
export type DisabledReason = 'gone' | 'retries exhausted';

/** The `disabledReason` of an endpoint an operator disabled (updateWebhookEndpoint with `enabled` false). */
export const OPERATOR_DISABLED = 'disabled by an operator';

/** The secrets as stored: a JSON array in a TEXT column. */
const secretsTransformer: ValueTransformer = {
  to: (secrets: readonly WebhookSecret[] | undefined) => (secrets === undefined ? undefined : JSON.stringify(secrets)),
  from: (text: string) => JSON.parse(text) as WebhookSecret[],
};

/**
 * One webhook endpoint (table `webhook_endpoint`, docs/webhooks.md): where to deliver, what, how far its deliveries have
 * got, and the lease of the one instance delivering to it. Every time is the database's clock (UTC), written by the
 * repository's SQL, never Node's.
 */
@Entity({ name: 'webhook_endpoint' })
@Index('idx_webhook_endpoint_state', ['state', 'nextAttemptAt'])
export class WebhookEndpoint {
  @PrimaryGeneratedColumn({ type: 'int' })
  id!: number;

  @Column({ type: 'varchar', length: WEBHOOK_LIMITS.urlMaxLength })
  url!: string;

  /** Only pets with this status; every pet when null. */
  @Column({ name: 'status_filter', type: 'varchar', length: 16, nullable: true })
  status!: PetStatus | null;

  @Column({ type: 'varchar', length: WEBHOOK_LIMITS.descriptionMaxLength, nullable: true })
  description!: string | null;

  /** Newest first: every secret not expired signs each delivery. */
  @Column({ type: 'text', transformer: secretsTransformer })
  secrets!: WebhookSecret[];

  @Column({ type: 'varchar', length: 16 })
  state!: 'enabled' | 'disabled';

  /** Why it was disabled (a DisabledReason); null while enabled. */
  @Column({ name: 'disabled_reason', type: 'varchar', length: 200, nullable: true })
  disabledReason!: string | null;

  /** The feed position delivered last (or skipped, not matching the filter): the next delivery is the first match after it. */
  @Column({ name: 'cursor_seq', type: 'bigint', transformer: int64Transformer })
  cursor!: number;

  @Column({ name: 'created_at', type: 'datetime', precision: 3 })
  createdAt!: Date;

  @Column({ name: 'last_success_at', type: 'datetime', precision: 3, nullable: true })
  lastSuccessAt!: Date | null;

  @Column({ name: 'last_failure_at', type: 'datetime', precision: 3, nullable: true })
  lastFailureAt!: Date | null;

  @Column({ name: 'failures_in_row', type: 'int', default: 0 })
  failuresInRow!: number;

  /** Attempts of the event in progress that failed (0: its first attempt is next). */
  @Column({ type: 'int', default: 0 })
  attempt!: number;

  /** Not before this time (a retry's delay); due now when null. */
  @Column({ name: 'next_attempt_at', type: 'datetime', precision: 3, nullable: true })
  nextAttemptAt!: Date | null;

  /** The instance delivering to it now; null when none does. CHAR(36): `nchar` is that on MySQL, and sql.js takes it. */
  @Column({ name: 'lease_holder', type: 'nchar', length: 36, nullable: true })
  leaseHolder!: string | null;

  /** When that instance's lease runs out. */
  @Column({ name: 'lease_expires_at', type: 'datetime', precision: 3, nullable: true })
  leaseExpiresAt!: Date | null;
}
