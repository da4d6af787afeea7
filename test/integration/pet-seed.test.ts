import catNames from 'cat-names';
import dogNames from 'dog-names';
import type { DataSource } from 'typeorm';
import { Pet } from '../../src/pets/pet.entity';
import { SEED_CATEGORY_COUNT, seedPets, seededPet } from '../../src/pets/pet.seed';
import { openTestDatabase } from '../helpers/test-database';

/** seedPets on the run's database (embedded sql.js, or MariaDB with TEST_DATABASE_URL). */
describe('seedPets', () => {
  let dataSource: DataSource;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ dataSource, close } = await openTestDatabase());
  });
  afterAll(() => close());
  beforeEach(() => dataSource.getRepository(Pet).clear());

  test('when 2,345 pets are seeded (three chunks), then 2,345 rows with real names over 3 statuses and 20 categories', async () => {
    expect(await seedPets(dataSource, 2345)).toBe(2345);
    const pets = await dataSource.getRepository(Pet).find({ order: { id: 'ASC' } });
    expect(pets).toHaveLength(2345);
    const real = new Set<string>([...dogNames.all, ...catNames.all]);
    expect(pets.every((pet) => real.has(pet.name))).toBe(true);
    expect(new Set(pets.map((pet) => pet.name)).size).toBe(real.size);
    expect(new Set(pets.map((pet) => pet.status))).toEqual(new Set(['available', 'pending', 'sold']));
    expect(new Set(pets.map((pet) => pet.categoryId))).toEqual(new Set(Array.from({ length: SEED_CATEGORY_COUNT }, (_, i) => i + 1)));
    // In the order seeded, and each row as seededPet describes it.
    pets.forEach((pet, index) => expect({ name: pet.name, categoryId: pet.categoryId, status: pet.status }).toEqual(seededPet(index)));
  });

  test('when the same count is seeded twice, then the second batch repeats the first (deterministic) and nothing is removed', async () => {
    await seedPets(dataSource, 50);
    await seedPets(dataSource, 50);
    const pets = await dataSource.getRepository(Pet).find({ order: { id: 'ASC' } });
    expect(pets).toHaveLength(100);
    const strip = ({ name, categoryId, status }: Pet) => ({ name, categoryId, status });
    expect(pets.slice(50).map(strip)).toEqual(pets.slice(0, 50).map(strip));
  });

  test('when the count is 0, then nothing is added; when it is negative or fractional, then RangeError', async () => {
    expect(await seedPets(dataSource, 0)).toBe(0);
    expect(await dataSource.getRepository(Pet).count()).toBe(0);
    await expect(seedPets(dataSource, -1)).rejects.toThrow(RangeError);
    await expect(seedPets(dataSource, 1.5)).rejects.toThrow(RangeError);
  });
});
