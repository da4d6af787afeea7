import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { emitSchemaDefinitionFile } from 'type-graphql';
import { buildPetStoreSchema } from '../src/graphql/schema';

describe('schema.graphql', () => {
  test('when the schema is generated from the code, then it equals the committed file (run `npm run schema` to update)', async () => {
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'schema-')), 'schema.graphql');
    await emitSchemaDefinitionFile(file, await buildPetStoreSchema());
    const committed = await readFile(path.resolve(__dirname, '..', 'schema.graphql'), 'utf8');
    expect(committed).toBe(await readFile(file, 'utf8'));
  });

  test('when read, then it has the three operations of the spec with the agreed signatures', async () => {
    const sdl = await readFile(path.resolve(__dirname, '..', 'schema.graphql'), 'utf8');
    expect(sdl).toMatch(/pets\(\s*(""".*"""\s*)?limit: Int = 20\s*(""".*"""\s*)?status: PetStatus\s*\): \[Pet!\]!/s);
    expect(sdl).toMatch(/\): Pet @deprecated\(reason: ".*pets\(status:\).*2030-12-05.*"\)/);
    expect(sdl).toMatch(/createPet\(input: NewPetInput!\): Pet!/);
  });
});
