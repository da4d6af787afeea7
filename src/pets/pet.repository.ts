import type { DataSource, EntityManager } from 'typeorm';
import type { Database } from '../database/database';
import { type DatabaseBudget, withinDeadline } from '../database/database-deadline';
import { toSafeInteger } from '../database/int64';
import { PetStatus } from './pet-status.enum';
import { Pet } from './pet.entity';

/** A validated new pet. */
export interface NewPet {
  name: string;
  categoryId: number;
  status: PetStatus;
}

/** A pet as the database returns it: BIGINT columns as decimal strings (MySQL) or numbers (SQLite). */
export interface PetRow {
  id: string | number;
  name: string;
  categoryId: string | number;
  status: PetStatus;
}

/** The four columns of `pet`, as raw rows (no entity hydration). */
export function selectPets(dataSource: DataSource) {
  return dataSource
    .createQueryBuilder(Pet, 'pet')
    .select('pet.id', 'id')
    .addSelect('pet.name', 'name')
    .addSelect('pet.categoryId', 'categoryId')
    .addSelect('pet.status', 'status');
}

const STATUS_ID_INDEX = 'idx_pet_status_id';

/**
 * `USE INDEX` to `FORCE INDEX` (MySQL family only): even with USE INDEX, MariaDB reads every row of the status rather than
 * the `(status, id)` range from the cursor (bench/README.md "Deep pages").
 */
export function forceIndex(sql: string): string {
  return sql.replace(' USE INDEX (', ' FORCE INDEX (');
}

/** The one place the int64 columns are converted (exactly, or RangeError). */
export function toPet(row: PetRow): Pet {
  return { id: toSafeInteger(row.id), name: row.name, categoryId: toSafeInteger(row.categoryId), status: row.status };
}

/** A NewPet's values in the order of the INSERT's placeholders. */
const insertParameters = ({ name, categoryId, status }: NewPet) => [name, categoryId, status];

/** The INSERT of one NewPet, built by TypeORM in the DataSource's dialect; throws at start if its placeholders are in another order. */
function insertStatement(dataSource: DataSource): string {
  const probe: NewPet = { name: 'probe', categoryId: 7, status: PetStatus.pending };
  const [sql, parameters] = dataSource.createQueryBuilder().insert().into(Pet).values(probe).getQueryAndParameters();
  if (JSON.stringify(parameters) !== JSON.stringify(insertParameters(probe))) throw new Error(`The pet INSERT binds ${JSON.stringify(parameters)}: ${sql}`);
  return sql;
}

/** Where a call runs: in a caller's transaction (`manager`), else as one call under `withinDeadline` within the request's `budget`. */
export interface PetCallScope {
  manager?: EntityManager;
  budget?: DatabaseBudget;
}

/** The pet table. Each method is one call under `withinDeadline` (docs/failures.md "The database") unless given a caller's EntityManager. */
export class PetRepository {
  /**
   * Each read's SQL, built once, not per call (bench/README.md "What makes it fast"); keyset pages, never OFFSET (docs/pagination.md).
   * Bound per call: `list` (afterId, limit), `listByStatus` (status, afterId, limit), `byId` (id). The pagination test and the bench EXPLAIN these.
   */
  readonly sql: Readonly<{ list: string; listByStatus: string; byId: string }>;

  /**
   * The create's INSERT, built once as the reads are, where a raw INSERT answers the new id (Database.dialect.rawInsertId:
   * the MySQL family); elsewhere (sql.js) TypeORM's insert() runs, which reads the id its own way.
   */
  private readonly insertSql: string | undefined;

  constructor(private readonly database: Database) {
    const dataSource = database.writer;
    const ordered = (query: ReturnType<typeof selectPets>) => `${query.orderBy('pet.id', 'ASC').getQuery()} LIMIT ?`;
    this.sql = {
      list: ordered(selectPets(dataSource).where('pet.id > ?')),
      listByStatus: forceIndex(ordered(selectPets(dataSource).useIndex(STATUS_ID_INDEX).where('pet.status = ?').andWhere('pet.id > ?'))),
      byId: selectPets(dataSource).where('pet.id = ?').getQuery(),
    };
    this.insertSql = database.dialect.rawInsertId ? insertStatement(dataSource) : undefined;
  }

  /** Up to `limit` pets with an id above `afterId`, in id order, from a replica when configured; throws DatabaseDeadlineError (503). */
  list(options: { limit: number; status?: PetStatus; afterId: number; budget?: DatabaseBudget }): Promise<Pet[]> {
    return withinDeadline(
      this.database,
      async (manager) => {
        const rows: PetRow[] = options.status
          ? await manager.query(this.sql.listByStatus, [options.status, options.afterId, options.limit])
          : await manager.query(this.sql.list, [options.afterId, options.limit]);
        return rows.map(toPet);
      },
      { mode: 'slave', budget: options.budget },
    );
  }

  /** The pet or null, read within `manager` if given, else on a replica when configured; throws DatabaseDeadlineError (503). */
  async findById(id: number, { manager, budget }: PetCallScope = {}): Promise<Pet | null> {
    const find = async (within: EntityManager) => {
      const [row]: PetRow[] = await within.query(this.sql.byId, [id]);
      return row ? toPet(row) : null;
    };
    return manager ? find(manager) : withinDeadline(this.database, find, { mode: 'slave', budget });
  }

  /**
   * Stores a pet with one INSERT, in `manager`'s transaction if given, else alone as one autocommit statement
   * (docs/failures.md "503 or 504 on a create"): abandoned before it was sent, it stores nothing (503, safe to retry).
   * @throws DatabaseDeadlineError (503, nothing stored); CommitOutcomeUnknownError (504: sent, never confirmed; no id known).
   */
  async create(newPet: NewPet, { manager, budget }: PetCallScope = {}): Promise<Pet> {
    const insert = async (within: EntityManager): Promise<Pet> => {
      if (this.insertSql !== undefined) {
        const { insertId }: { insertId: number | string } = await within.query(this.insertSql, insertParameters(newPet));
        return { id: toSafeInteger(insertId), name: newPet.name, categoryId: newPet.categoryId, status: newPet.status };
      }
      const pets = within.getRepository(Pet);
      const pet = pets.create(newPet);
      const result = await pets.insert(pet);
      pet.id = toSafeInteger(result.identifiers[0].id as string | number);
      return pet;
    };
    return manager ? insert(manager) : withinDeadline(this.database, insert, { autocommitWrite: true, budget });
  }
}
