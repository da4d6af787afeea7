import catNames from 'cat-names';
import dogNames from 'dog-names';
import type { DataSource } from 'typeorm';
import { PetStatus } from './pet-status.enum';
import { Pet } from './pet.entity';

export const SEED_CATEGORY_COUNT = 20;

/** Rows per INSERT: 3 parameters each, well under every driver's limit. */
const CHUNK_ROWS = 1000;

function realNames(): string[] {
  return [...dogNames.all, ...catNames.all];
}

const STATUSES = [PetStatus.available, PetStatus.pending, PetStatus.sold] as const;

/** The `index`-th seeded pet: a name stride coprime with the name count keeps neighbours apart; each (category, status) once per 60 rows. */
export function seededPet(index: number, names: readonly string[] = realNames()): Pick<Pet, 'name' | 'categoryId' | 'status'> {
  return {
    name: names[(index * 7) % names.length],
    categoryId: (index % SEED_CATEGORY_COUNT) + 1,
    status: STATUSES[index % STATUSES.length],
  };
}

/**
 * Adds `count` deterministic pets to a migrated database, returning `count`; in one transaction, so the embedded database
 * saves its file once. Throws RangeError for a negative or non-integer count.
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
