import catNames from 'cat-names';
import dogNames from 'dog-names';
import type { DataSource } from 'typeorm';
import { PetStatus } from './pet-status.enum';
import { Pet } from './pet.entity';

/** How many categories the seeded pets are spread over (ids 1 to 20). */
export const SEED_CATEGORY_COUNT = 20;

/** Rows per INSERT statement: 3 parameters each, well under every driver's limit. */
const CHUNK_ROWS = 1000;

/** Real pet names: the `dog-names` (200) and `cat-names` (100) packages, in their published order. */
function realNames(): string[] {
  return [...dogNames.all, ...catNames.all];
}

const STATUSES = [PetStatus.available, PetStatus.pending, PetStatus.sold] as const;

/**
 * The `index`-th seeded pet (0-based), without an id: a deterministic function of `index`.
 * Names cycle through the real names with a stride that is coprime with their count, so
 * neighbouring rows differ; `categoryId` cycles 1 to 20 and `status` the three PetStatus values,
 * so every (category, status) pair appears once in every 60 rows.
 */
export function seededPet(index: number, names: readonly string[] = realNames()): Pick<Pet, 'name' | 'categoryId' | 'status'> {
  return {
    name: names[(index * 7) % names.length],
    categoryId: (index % SEED_CATEGORY_COUNT) + 1,
    status: STATUSES[index % STATUSES.length],
  };
}

/**
 * Adds `count` pets with real names, deterministically (the same call always adds the same
 * rows, in the same order; ids are whatever the database assigns next). Existing rows are
 * kept. Rows are written with multi-row INSERTs of 1,000 rows, no reload, all in one
 * transaction (so the embedded database saves its file once). Works on MySQL/MariaDB and on
 * the embedded sql.js database. For a million rows on MySQL, seed a base with this and grow it
 * with `INSERT … SELECT` (see bench/).
 *
 * @param dataSource - an initialised DataSource whose migrations have run.
 * @param count - how many pets to add (a non-negative integer).
 * @returns how many pets were added (= `count`).
 * @throws RangeError for a negative or non-integer count; the driver's error if an INSERT fails
 *   (then nothing is added).
 */
export async function seedPets(dataSource: DataSource, count: number): Promise<number> {
  if (!Number.isSafeInteger(count) || count < 0) throw new RangeError(`count must be a non-negative integer, got ${count}`);
  if (count === 0) return 0;
  const names = realNames();
  await dataSource.transaction(async (manager) => {
    for (let start = 0; start < count; start += CHUNK_ROWS) {
      const rows = [];
      for (let index = start; index < Math.min(start + CHUNK_ROWS, count); index++) rows.push(seededPet(index, names));
      await manager.createQueryBuilder().insert().into(Pet).values(rows).updateEntity(false).execute();
    }
  });
  return count;
}
