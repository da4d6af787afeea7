import type { DataSource, EntityManager } from 'typeorm';
import { withinDeadline } from '../database/database-deadline';
import { toSafeInteger } from '../database/int64';
import type { PetStatus } from './pet-status.enum';
import { Pet } from './pet.entity';

/** What the service needs to add an animal; already validated. */
export interface NewPet {
  name: string;
  categoryId: number;
  status: PetStatus;
}

/** A pet as the database returns it: BIGINT columns as decimal strings (MySQL) or numbers (SQLite). */
interface PetRow {
  id: string | number;
  name: string;
  categoryId: string | number;
  status: PetStatus;
}

/**
 * The four columns of `pet`, as raw rows (no entity hydration).
 */
function selectPets(dataSource: DataSource) {
  return dataSource
    .createQueryBuilder(Pet, 'pet')
    .select('pet.id', 'id')
    .addSelect('pet.name', 'name')
    .addSelect('pet.categoryId', 'categoryId')
    .addSelect('pet.status', 'status');
}

/** The `(status, id)` index (pet.entity.ts): a filtered page is a range on it. */
const STATUS_ID_INDEX = 'idx_pet_status_id';

/**
 * Turns TypeORM's `USE INDEX` (MySQL family only; other dialects get no hint) into `FORCE
 * INDEX`. MariaDB plans `status = ? AND id > ? ORDER BY id` as a lookup of every row with
 * that status, the id test applied to each in turn, even with USE INDEX: page 5,000 of a
 * filtered list took 22 times as long as page 1 at 1,000,000 rows (bench/README.md
 * "Deep pages"). FORCE INDEX makes it a range on `(status, id)` that starts at the cursor.
 */
function forceIndex(sql: string): string {
  return sql.replace(' USE INDEX (', ' FORCE INDEX (');
}

/** A raw row as a Pet; the one place the int64 columns are converted (exactly, or RangeError). */
function toPet(row: PetRow): Pet {
  return { id: toSafeInteger(row.id), name: row.name, categoryId: toSafeInteger(row.categoryId), status: row.status };
}

/**
 * The pet table (spec "listPets", "createPet", "getPet"): the queries and the insert. Knows neither
 * GraphQL nor HTTP; inputs arrive validated by PetService. Each method is one database call
 * within the deadline of `withinDeadline` (docs/failures.md "The database"), unless it is given the
 * EntityManager of a call its caller runs.
 */
export class PetRepository {
  /**
   * The SQL of each read, built by TypeORM's QueryBuilder once, in the DataSource's dialect,
   * instead of on every call (bench/README.md "What makes it fast"); the `?` parameters are bound per call:
   * `list` (afterId, limit), `listByStatus` (status, afterId, limit), `byId` (id). The lists
   * are keyset pages (docs/pagination.md): a range on the primary key, or on the
   * `(status, id)` index, never an OFFSET, so page 5,000 costs what page 1 does. The bench
   * EXPLAINs these.
   */
  readonly sql: Readonly<{ list: string; listByStatus: string; byId: string }>;

  /** @param dataSource - the initialised DataSource holding the `pet` table. */
  constructor(private readonly dataSource: DataSource) {
    const ordered = (query: ReturnType<typeof selectPets>) => `${query.orderBy('pet.id', 'ASC').getQuery()} LIMIT ?`;
    this.sql = {
      list: ordered(selectPets(dataSource).where('pet.id > ?')),
      listByStatus: forceIndex(ordered(selectPets(dataSource).useIndex(STATUS_ID_INDEX).where('pet.status = ?').andWhere('pet.id > ?'))),
      byId: selectPets(dataSource).where('pet.id = ?').getQuery(),
    };
  }

  /**
   * Lists animals in ascending id order (from a read replica when configured).
   *
   * @param options.limit - at most this many rows (1-101: a page and one more, to know whether another follows).
   * @param options.status - only rows with this status, when given.
   * @param options.afterId - only rows with a larger id (0: from the start).
   * @returns up to `limit` pets, ordered by id ascending.
   * @throws DatabaseDeadlineError (503) when the database does not answer in time.
   */
  list(options: { limit: number; status?: PetStatus; afterId: number }): Promise<Pet[]> {
    return withinDeadline(
      this.dataSource,
      async (manager) => {
        const rows: PetRow[] = options.status
          ? await manager.query(this.sql.listByStatus, [options.status, options.afterId, options.limit])
          : await manager.query(this.sql.list, [options.afterId, options.limit]);
        return rows.map(toPet);
      },
      { mode: 'slave' },
    );
  }

  /**
   * @param id - a positive identifier.
   * @param manager - the call to read within (e.g. on the primary); by default a call of its own,
   *   on a read replica when configured.
   * @returns the pet, or null when none has that id.
   * @throws DatabaseDeadlineError (503) when the database does not answer in time.
   */
  async findById(id: number, manager?: EntityManager): Promise<Pet | null> {
    const find = async (within: EntityManager) => {
      const [row]: PetRow[] = await within.query(this.sql.byId, [id]);
      return row ? toPet(row) : null;
    };
    return manager ? find(manager) : withinDeadline(this.dataSource, find, { mode: 'slave' });
  }

  /**
   * Looks a pet up on the primary, outside the budget of any request: for work that follows up
   * on a request already answered (a create whose COMMIT was never confirmed).
   *
   * @param id - a positive identifier.
   * @returns the pet, or null when none has that id.
   * @throws DatabaseDeadlineError (503) when the database does not answer in time.
   */
  findOnPrimary(id: number): Promise<Pet | null> {
    return withinDeadline(this.dataSource, (manager) => this.findById(id, manager), { background: true });
  }

  /**
   * Stores a new animal with one INSERT (no reload). On its own, the INSERT runs in a
   * transaction, so that a call abandoned at its deadline before COMMIT stores nothing (503
   * means "safe to retry"); only a COMMIT that is never confirmed leaves the outcome unknown.
   *
   * @param newPet - validated values.
   * @param manager - the transaction to insert within, if the caller runs one.
   * @returns the stored pet with its assigned id.
   * @throws DatabaseDeadlineError (503, nothing stored) or CommitOutcomeUnknownError (504).
   */
  async create(newPet: NewPet, manager?: EntityManager): Promise<Pet> {
    const insert = async (within: EntityManager) => {
      const pets = within.getRepository(Pet);
      const pet = pets.create(newPet);
      const result = await pets.insert(pet);
      pet.id = toSafeInteger(result.identifiers[0].id as string | number);
      return pet;
    };
    return manager ? insert(manager) : withinDeadline(this.dataSource, insert, { transaction: true });
  }
}
