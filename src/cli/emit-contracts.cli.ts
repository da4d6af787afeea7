import 'reflect-metadata';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { emitSchemaDefinitionFile } from 'type-graphql';
import { buildApp } from '../app';
import { loadConfig } from '../config';
import { openDatabase } from '../database/open-database';
import { buildPetStoreSchema } from '../graphql/schema';

/** The generated contracts, committed; tests fail when the code and these files differ. */
export const CONTRACT_FILES = Object.freeze({
  graphql: 'schema.graphql',
  openapi: path.join('contract', 'openapi.json'),
});

/** The OpenAPI document as the server publishes it with the default configuration (the environment is not read), as pretty JSON. */
export async function renderOpenapi(): Promise<string> {
  const database = await openDatabase({ type: 'sqlite', path: ':memory:' });
  const app = await buildApp({ config: loadConfig({ LOG_LEVEL: 'silent' }), database });
  try {
    return `${JSON.stringify(app.swagger(), null, 2)}\n`;
  } finally {
    await app.close();
    await database.close();
  }
}

/** `npm run contract`: rewrites schema.graphql and contract/openapi.json from the code. */
async function main(): Promise<void> {
  await emitSchemaDefinitionFile(path.resolve(CONTRACT_FILES.graphql), await buildPetStoreSchema());
  await mkdir(path.dirname(path.resolve(CONTRACT_FILES.openapi)), { recursive: true });
  await writeFile(path.resolve(CONTRACT_FILES.openapi), await renderOpenapi());
  process.stdout.write(`wrote ${CONTRACT_FILES.graphql} and ${CONTRACT_FILES.openapi}\n`);
}

if (require.main === module) void main();
