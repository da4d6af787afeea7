import 'reflect-metadata';
import path from 'node:path';
import { emitSchemaDefinitionFile } from 'type-graphql';
import { buildPetStoreSchema } from '../graphql/schema';

/** `npm run schema`: writes the SDL generated from the code to ./schema.graphql (committed). */
async function main(): Promise<void> {
  const file = path.resolve('schema.graphql');
  await emitSchemaDefinitionFile(file, await buildPetStoreSchema());
  process.stdout.write(`wrote ${file}\n`);
}

void main();
