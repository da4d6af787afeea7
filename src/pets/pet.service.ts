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
  list(options: { limit: number; status?: PetStatus }): Promise<Pet[]> {
    return this.pets.find({
      where: options.status ? { status: options.status } : {},
      order: { id: 'ASC' },
      take: options.limit,
    });
  }

  /**
   * @param id - a positive identifier.
   * @param manager - where to read, if not the default (a read replica when configured).
   * @returns the pet, or null when none has that id.
   */
  findById(id: number, manager?: EntityManager): Promise<Pet | null> {
    return (manager?.getRepository(Pet) ?? this.pets).findOneBy({ id });
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
