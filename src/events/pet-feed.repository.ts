import type { DataSource, EntityManager } from 'typeorm';
import type { Database } from '../database/database';
import { type DatabaseBudget, withinDeadline } from '../database/database-deadline';
import { toSafeInteger } from '../database/int64';
import { encodeEventCursor } from '../pets/pet-cursor';
import type { PetStatus } from '../pets/pet-status.enum';
import type { Pet } from '../pets/pet.entity';
import { type PetRow, forceIndex, selectPets, toPet } from '../pets/pet.repository';
import { PET_FEED_NAME, PetFeedRecord } from './pet-feed.entity';

/** One entry of the change feed (docs/events.md): a committed pet at its position `seq` (1, 2, 3, … with no gaps). */
export class PetEvent {
  private encoded: string | undefined;

  constructor(
    readonly seq: number,
    readonly pet: Pet,
  ) {}

  /** Its cursor (docs/events.md "Cursors"), encoded once however many followers send it. */
  get cursor(): string {
    return (this.encoded ??= encodeEventCursor(this.seq));
  }
}

/** The sequencer lost its lease between two batches: another instance leads now. */
export class FeedLeaseLostError extends Error {
  override readonly name = 'FeedLeaseLostError';
}

/** What to read: events after position `after`, up to and including `upTo` when given, only those with `status` when given. */
export interface FeedRead {
  after: number;
  limit: number;
  status?: PetStatus;
  upTo?: number;
  budget?: DatabaseBudget;
}

const STATUS_SEQ_INDEX = 'idx_pet_status_seq';

/** The feed's head: `SELECT … head` of its row, built by TypeORM in the DataSource's dialect; binds (name). */
export function selectFeedHead(dataSource: DataSource): string {
  return dataSource.createQueryBuilder(PetFeedRecord, 'feed').select('feed.head', 'head').where('feed.name = ?').getQuery();
}

/**
 * The feed's tables (docs/events.md "How it works"): `pet.seq`, stamped after COMMIT in batches by the one instance holding
 * the lease on `pet_feed` (PetFeedRecord), whose `head` is the last position stamped. Each batch is one transaction that
 * locks the head row, so batches commit one after another and a reader sees positions 1 … n and never n+1 without n.
 * Leases are on the database's clock (Database.dialect), so instances' clocks do not matter. Every call runs on the
 * primary: a replica could show a later batch before an earlier one if it applied them out of order.
 */
export class PetFeedRepository {
  /**
   * The SQL of the reads and of the stamp transaction's statements on `pet_feed`, built once by TypeORM's query builders,
   * not per call, as PetRepository's are (bench/README.md "What makes it fast"). Bound per call: `after` (after, upTo,
   * limit), `afterByStatus` (status, after, upTo, limit), `head` (name), `lockHead` (name), `moveHead` (head, name).
   */
  private readonly sql: Readonly<Record<'after' | 'afterByStatus' | 'head' | 'lockHead' | 'moveHead', string>>;

  constructor(private readonly database: Database) {
    const dataSource = database.writer;
    const { now, rowLock } = database.dialect;
    const ordered = (query: ReturnType<typeof selectPets>) => `${query.addSelect('pet.seq', 'seq').orderBy('pet.seq', 'ASC').getQuery()} LIMIT ?`;
    // The head row with the lease's validity on the database's clock, locked until COMMIT where the engine has row locks
    // (the embedded database has one writer).
    const lockHead = dataSource
      .createQueryBuilder(PetFeedRecord, 'feed')
      .select('feed.head', 'head')
      .addSelect('feed.leader', 'leader')
      .addSelect(`feed.leaseExpiresAt > ${now}`, 'valid')
      .where('feed.name = ?');
    if (rowLock) lockHead.setLock(rowLock.mode);
    this.sql = {
      after: ordered(selectPets(dataSource).where('pet.seq > ?').andWhere('pet.seq <= ?')),
      afterByStatus: forceIndex(
        ordered(selectPets(dataSource).useIndex(STATUS_SEQ_INDEX).where('pet.status = ?').andWhere('pet.seq > ?').andWhere('pet.seq <= ?')),
      ),
      head: selectFeedHead(dataSource),
      lockHead: lockHead.getQuery(),
      moveHead: dataSource
        .createQueryBuilder()
        .update(PetFeedRecord)
        .set({ head: () => '?' })
        .where('name = ?')
        .getQuery(),
    };
  }

  /**
   * Up to `limit` events after `after` (and up to `upTo`), in feed order, from the primary.
   * @throws DatabaseDeadlineError (503).
   */
  read({ after, limit, status, upTo = Number.MAX_SAFE_INTEGER, budget }: FeedRead): Promise<PetEvent[]> {
    return withinDeadline(
      this.database,
      async (manager) => {
        const rows: (PetRow & { seq: string | number })[] = status
          ? await manager.query(this.sql.afterByStatus, [status, after, upTo, limit])
          : await manager.query(this.sql.after, [after, upTo, limit]);
        return rows.map((row) => new PetEvent(toSafeInteger(row.seq), toPet(row)));
      },
      { budget },
    );
  }

  /**
   * The last position stamped: 0 before the first.
   * @throws DatabaseDeadlineError.
   */
  async head(): Promise<number> {
    return withinDeadline(this.database, async (manager) => {
      const [row]: { head: string | number }[] = await manager.query(this.sql.head, [PET_FEED_NAME]);
      return toSafeInteger(row.head);
    });
  }

  /**
   * Takes or renews the sequencer's lease for `holder` for `leaseSeconds` on the database's clock, if nobody else holds
   * one that has not run out. On the embedded database, which one process alone uses, that process always holds it and
   * nothing is written.
   * @returns whether `holder` holds the lease now.
   * @throws DatabaseDeadlineError.
   */
  async claimLease(holder: string, leaseSeconds: number): Promise<boolean> {
    if (this.database.embedded) return true;
    const { now, later } = this.database.dialect;
    return withinDeadline(this.database, async (manager) => {
      const result = await manager
        .createQueryBuilder()
        .update(PetFeedRecord)
        .set({ leader: holder, leaseExpiresAt: () => later(leaseSeconds) })
        .where('name = :name', { name: PET_FEED_NAME })
        .andWhere(`(leader = :holder OR leader IS NULL OR lease_expires_at < ${now})`, { holder })
        .execute();
      return result.affected === 1;
    });
  }

  /**
   * Gives the lease up, so another instance takes it at its next claim rather than when it runs out.
   * @throws DatabaseDeadlineError.
   */
  async releaseLease(holder: string): Promise<void> {
    if (this.database.embedded) return;
    await withinDeadline(this.database, (manager) => manager.getRepository(PetFeedRecord).update({ name: PET_FEED_NAME, leader: holder }, { leader: null }));
  }

  /** Whether a committed pet awaits its position: one index lookup. */
  async hasUnstamped(): Promise<boolean> {
    return withinDeadline(this.database, async (manager) => {
      const rows: unknown[] = await manager.query('SELECT id FROM pet WHERE seq IS NULL LIMIT 1');
      return rows.length > 0;
    });
  }

  /**
   * Stamps up to `limit` committed, unstamped pets with the next positions, in id order, in one transaction that first
   * locks the head row and checks that `holder` still holds the lease.
   * @returns the pets stamped (0 when none was waiting) and the head after them.
   * @throws FeedLeaseLostError; DatabaseDeadlineError.
   */
  stamp(holder: string, limit: number): Promise<{ stamped: number; head: number }> {
    // READ COMMITTED: the UPDATE may scan rows, and under REPEATABLE READ would wait for every uncommitted INSERT it meets.
    return withinDeadline(this.database, (manager) => this.stampWithin(manager, holder, limit), { transaction: 'READ COMMITTED' });
  }

  private async stampWithin(manager: EntityManager, holder: string, limit: number): Promise<{ stamped: number; head: number }> {
    const [feed]: { head: string | number; leader: string | null; valid: string | number | null }[] = await manager.query(this.sql.lockHead, [PET_FEED_NAME]);
    if (!this.database.embedded && (feed.leader !== holder || Number(feed.valid) !== 1)) throw new FeedLeaseLostError('another instance holds the feed lease');
    const head = toSafeInteger(feed.head);
    // The batch itself is plain SQL both engines run as written: one index range of unstamped ids, one UPDATE numbering them.
    // Read after the head row is locked: every pet committed before the previous batch's COMMIT is seen.
    const rows: { id: string | number }[] = await manager.query('SELECT id FROM pet WHERE seq IS NULL ORDER BY id LIMIT ?', [limit]);
    if (rows.length === 0) return { stamped: 0, head };
    const ids = rows.map((row) => toSafeInteger(row.id));
    await manager.query(`UPDATE pet SET seq = CASE id ${ids.map(() => 'WHEN ? THEN ?').join(' ')} END WHERE id IN (${ids.map(() => '?').join(', ')})`, [
      ...ids.flatMap((id, index) => [id, head + index + 1]),
      ...ids,
    ]);
    await manager.query(this.sql.moveHead, [head + ids.length, PET_FEED_NAME]);
    return { stamped: ids.length, head: head + ids.length };
  }
}
