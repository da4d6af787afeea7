import { Pet } from '../../src/pets/pet.entity';
import { countPets, graphql, request, startTestApp, type TestApp } from '../helpers/test-app';
import { PET_LIMITS } from '../../src/limits';

/**
 * The rules on a pet's `name` (docs/decisions.md), through both
 * surfaces, down to what the database stores: at most 100 Unicode code points (the unit
 * MySQL's utf8mb4 VARCHAR(100) counts), and not blank, where characters that show nothing
 * (white space, control, format and default-ignorable characters) do not make a name.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());
beforeEach(() => t.clearPets());

const CREATE = 'mutation($input: NewPetInput!) { createPet(input: $input) { id name } }';

/** Creates through one surface; the stored id on success, else the error code. */
async function create(surface: 'REST' | 'GraphQL', name: string): Promise<{ id: number } | { code: string; status: number }> {
  if (surface === 'REST') {
    const result = await request(t, 'POST', '/v1/pets', { body: { name, categoryId: 1 } });
    if (result.status === 201) return { id: result.body.id };
    return { code: result.body.code, status: result.status };
  }
  const result = await graphql(t, CREATE, { input: { name, categoryId: 1 } });
  if (result.body.data?.createPet) return { id: Number(result.body.data.createPet.id) };
  return { code: result.body.errors?.[0]?.extensions?.code, status: result.status };
}

/** What the database holds for that id, read back with the repository (not through the API). */
async function storedName(id: number): Promise<string | undefined> {
  return (await t.dataSource.getRepository(Pet).findOneBy({ id }))?.name;
}

const codePoints = (name: string) => [...name].length;
const max = PET_LIMITS.nameMaxLength;

// Pairs of names of exactly `max` code points and of one more.
const HEART = '❤️'; // U+2764 U+FE0F: a variation selector, which validator.js's isLength does not count
const FAMILY = '👩‍👩‍👧'; // 👩 ZWJ 👩 ZWJ 👧: five code points, eight UTF-16 units, one grapheme
const lengths: Array<[string, string, string]> = [
  ['a variation selector', 'x'.repeat(max - 2) + HEART, 'x'.repeat(max - 1) + HEART],
  ['variation selectors throughout', HEART.repeat(max / 2), '❤' + HEART.repeat(max / 2)],
  ['a ZWJ sequence', 'x'.repeat(max - 5) + FAMILY, 'x'.repeat(max - 4) + FAMILY],
  ['ZWJ sequences only', FAMILY.repeat(max / 5), '👧' + FAMILY.repeat(max / 5)],
  ['astral letters (𝒳)', '𝒳'.repeat(max), '𝒳'.repeat(max + 1)],
  ['astral emoji (🐶)', '🐶'.repeat(max), '🐶'.repeat(max + 1)],
  ['plain letters', 'x'.repeat(max), 'x'.repeat(max + 1)],
];

describe.each(['REST', 'GraphQL'] as const)('name length through %s (code points)', (surface) => {
  test.each(lengths)(`when the name has ${max} code points with %s, then it is created and stored exactly`, async (_case, name) => {
    expect(codePoints(name)).toBe(max);
    const outcome = await create(surface, name);
    expect(outcome).toEqual({ id: expect.any(Number) });
    expect(await storedName((outcome as { id: number }).id)).toBe(name);
  });

  test.each(lengths)(`when the name has ${max + 1} code points with %s, then BAD_USER_INPUT and nothing is stored`, async (_case, _atMax, name) => {
    expect(codePoints(name)).toBe(max + 1);
    expect(await create(surface, name)).toEqual({ code: 'BAD_USER_INPUT', status: surface === 'REST' ? 400 : 200 });
    expect(await countPets(t)).toBe(0);
  });
});

describe.each(['REST', 'GraphQL'] as const)('blank names through %s', (surface) => {
  test.each([
    ['a zero-width space', '\u200b'],
    ['a word joiner', '\u2060'],
    ['a byte order mark', '\ufeff'],
    ['a zero-width space and non-joiner', '\u200b\u200c'],
    ['a lone variation selector', '\ufe0f'],
    ['a zero-width joiner', '\u200d'],
    ['a soft hyphen', '\u00ad'],
    ['a Hangul filler', '\u3164'],
    ['spaces around invisible characters', ' \u200b\u2060 '],
    ['an ideographic space', '\u3000'],
    ['a no-break space', '\u00a0'],
  ])('when the name is only %s, then BAD_USER_INPUT and nothing is stored', async (_case, name) => {
    expect(await create(surface, name)).toEqual({ code: 'BAD_USER_INPUT', status: surface === 'REST' ? 400 : 200 });
    expect(await countPets(t)).toBe(0);
  });

  test.each([['❤️'], ['👩‍👩‍👧'], ['Ünal'], ['李'], ['\u200bRex'], ['Bo\u00a0Bo'], ['e\u0301']])(
    'when the name is %s, then it is created and stored exactly',
    async (name) => {
      const outcome = await create(surface, name);
      expect(outcome).toEqual({ id: expect.any(Number) });
      expect(await storedName((outcome as { id: number }).id)).toBe(name);
    },
  );
});
