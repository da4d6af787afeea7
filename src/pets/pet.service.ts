import type { EntityManager, Repository } from 'typeorm';
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
 * The four columns of `pet`, as raw rows (no entity hydration; TypeORM still routes the read
 * to a replica when one is configured).
 */
function selectPets(manager: EntityManager) {
  return manager
    .createQueryBuilder(Pet, 'pet')
    .select('pet.id', 'id')
    .addSelect('pet.name', 'name')
    .addSelect('pet.categoryId', 'categoryId')
    .addSelect('pet.status', 'status');
}

/** A raw row as a Pet; the one place the int64 columns are converted (exactly, or RangeError). */
function toPet(row: PetRow): Pet {
  return { id: toSafeInteger(row.id), name: row.name, categoryId: toSafeInteger(row.categoryId), status: row.status };
}

/**
 * Pet persistence and queries (spec "listPets", "createPet", "getPet"). Knows neither
 * GraphQL nor HTTP; inputs arrive validated by the resolver.
 */
export class PetService {
  /** @param pets - the TypeORM repository of {@link Pet}. */
  constructor(private readonly pets: Repository<Pet>) {}

  /**
   * Lists animals in ascending id order.
   *
   * @param options.limit - at most this many rows (1-100).
   * @param options.status - only rows with this status, when given.
   * @returns up to `limit` pets, ordered by id ascending.
   */
  async list(options: { limit: number; status?: PetStatus }): Promise<Pet[]> {
    const query = selectPets(this.pets.manager);
    if (options.status) query.where('pet.status = :status', { status: options.status });
    return (await query.orderBy('pet.id', 'ASC').limit(options.limit).getRawMany<PetRow>()).map(toPet);
  }

  /**
   * @param id - a positive identifier.
   * @param manager - where to read, if not the default (a read replica when configured).
   * @returns the pet, or null when none has that id.
   */
  async findById(id: number, manager?: EntityManager): Promise<Pet | null> {
    const row = await selectPets(manager ?? this.pets.manager).where('pet.id = :id', { id }).getRawOne<PetRow>();
    return row ? toPet(row) : null;
  }

  /**
   * Stores a new animal with one INSERT (no reload).
   *
   * @param newPet - validated values.
   * @param manager - the transaction to insert within, if any.
   * @returns the stored pet with its assigned id.
   */
  async create(newPet: NewPet, manager?: EntityManager): Promise<Pet> {
    const pets = manager?.getRepository(Pet) ?? this.pets;
    const pet = pets.create(newPet);
    const result = await pets.insert(pet);
    pet.id = toSafeInteger(result.identifiers[0].id);
    return pet;
  }
}
