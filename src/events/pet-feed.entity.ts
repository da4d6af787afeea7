import { Column, Entity, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';

/** The name of the one row of `pet_feed`: the feed of pets. */
export const PET_FEED_NAME = 'pets';

/**
 * The row of the change feed (table `pet_feed`, docs/events.md "How it works"): its head, the last position stamped, and
 * the sequencer's lease, held by one instance until `leaseExpiresAt` on the database's clock. One row, {@link PET_FEED_NAME}.
 */
@Entity({ name: 'pet_feed' })
export class PetFeedRecord {
  @PrimaryColumn({ type: 'varchar', length: 32 })
  name!: string;

  /** The last position stamped: 0 before the first. */
  @Column({ type: 'bigint', transformer: int64Transformer })
  head!: number;

  /** The instance holding the lease (its sequencer's id); null when none does. CHAR(36): `nchar` is that on MySQL, and sql.js takes it. */
  @Column({ type: 'nchar', length: 36, nullable: true })
  leader!: string | null;

  /** When the lease runs out, on the database's clock (UTC). */
  @Column({ name: 'lease_expires_at', type: 'datetime', precision: 3, nullable: true })
  leaseExpiresAt!: Date | null;
}
