import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runBin, runNode, startBuiltServer } from '../helpers/processes';
import { compileStrict } from '../helpers/typescript';

/*
 * A REST client generated from the served OpenAPI document by each of the common generators, with
 * its default options, compiles a program that lists pets and creates one with only `name` and
 * `categoryId`, and that program runs against the built server. Clients are generated from
 * contract/openapi.json (what the server serves, test/integration/contract.test.ts) into test/output/ (ignored).
 */

const ROOT = path.resolve(__dirname, '..', '..');
const DOCUMENT = path.join(ROOT, 'contract', 'openapi.json');
const OUTPUT = path.join(ROOT, 'test', 'output', 'generated-clients');

/** A generator: how it is run on a document with its defaults, and the client calls of the program. */
interface Generator {
  /** The package, as the test names it. */
  name: string;
  /** Generates the client from `document` into `folder`. */
  generate: (document: string, folder: string) => Promise<unknown>;
  /** The program's imports and set-up, then `listed` (an array of pets) and `created` (the new pet); API_URL and API_KEY are in scope. */
  program: string;
  /** The `lib` it compiles with, when not the repository's (ES2022 only). */
  lib?: string[];
}

const GENERATORS: Generator[] = [
  {
    name: 'openapi-typescript + openapi-fetch',
    generate: (document, folder) => runBin('openapi-typescript', [document, '-o', path.join(folder, 'openapi.d.ts')]),
    program: `
import createClient from 'openapi-fetch';
import type { paths } from './openapi';

const client = createClient<paths>({ baseUrl: \`\${API_URL}/v1\`, headers: { Authorization: \`Bearer \${API_KEY}\` } });

export async function listAndCreate() {
  const listed = await client.GET('/pets', { params: { query: { limit: 5 } } });
  const created = await client.POST('/pets', { body: { name: 'Made by openapi-fetch', categoryId: 1 } });
  if (!listed.data || !created.data) throw new Error(JSON.stringify(listed.error ?? created.error));
  return { listed: listed.data, created: created.data };
}`,
  },
  {
    name: '@hey-api/openapi-ts',
    // Its fetch client names DOM's BodyInit: a browser project has DOM in `lib`; a Node one adds it.
    lib: ['ES2022', 'DOM'],
    generate: (document, folder) => runBin('openapi-ts', ['-i', document, '-o', path.join(folder, 'hey-api')]),
    program: `
import { client } from './hey-api/client.gen';
import { createPet, listPets } from './hey-api';

client.setConfig({ baseUrl: \`\${API_URL}/v1\`, auth: API_KEY });

export async function listAndCreate() {
  const listed = await listPets({ query: { limit: 5 } });
  const created = await createPet({ body: { name: 'Made by hey-api', categoryId: 1 } });
  if (!listed.data || !created.data) throw new Error(JSON.stringify(listed.error ?? created.error));
  return { listed: listed.data, created: created.data };
}`,
  },
  {
    name: 'orval',
    // orval's default client: functions over axios's default instance. They return `axios.get(…)` as `Promise<TData>`,
    // which axios 1.19's new return type (AxiosResponseResult) no longer fits: package.json pins axios 1.18.1.
    generate: (document, folder) => runBin('orval', ['-i', document, '-o', path.join(folder, 'orval', 'pet-store.ts')]),
    program: `
import axios from 'axios';
import { createPet, listPets } from './orval/pet-store';

axios.defaults.baseURL = \`\${API_URL}/v1\`;
axios.defaults.headers.common.Authorization = \`Bearer \${API_KEY}\`;

export async function listAndCreate() {
  const listed = await listPets({ limit: 5 });
  const created = await createPet({ name: 'Made by orval', categoryId: 1 });
  return { listed: listed.data, created: created.data };
}`,
  },
];

/**
 * Writes `main.ts` into `folder`: the generator's program, then one JSON line with the number of
 * pets listed and the pet created; exit 1 on any error.
 */
async function writeProgram(folder: string, program: string): Promise<string> {
  const file = path.join(folder, 'main.ts');
  const main = `
const API_URL = process.env.API_URL ?? 'http://127.0.0.1:3000';
const API_KEY = process.env.API_KEY ?? '';
${program}

listAndCreate().then(
  ({ listed, created }) => console.log(JSON.stringify({ listed: listed.length, created })),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
`;
  await writeFile(file, main);
  return file;
}

/** A fresh folder under test/output/generated-clients/. */
async function freshFolder(name: string): Promise<string> {
  const folder = path.join(OUTPUT, name.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, ''));
  await rm(folder, { recursive: true, force: true });
  await mkdir(folder, { recursive: true });
  return folder;
}

describe('REST clients generated from the OpenAPI document, each with its default options', () => {
  let server: Awaited<ReturnType<typeof startBuiltServer>>;
  beforeAll(async () => {
    server = await startBuiltServer('generated-clients-');
  });
  afterAll(() => server?.stop());

  test.each(GENERATORS.map((generator) => [generator.name, generator] as const))(
    'when %s generates a client, then a program that creates a pet with only name and categoryId compiles and runs',
    async (_name, { name, generate, program, lib }) => {
      const folder = await freshFolder(name);
      await generate(DOCUMENT, folder);
      const main = await writeProgram(folder, program);
      expect(compileStrict([main], folder, lib)).toEqual([]);

      const run = await runNode(main.replace(/\.ts$/, '.js'), [], { cwd: folder, env: { API_URL: server.url, API_KEY: server.apiKey } });
      expect(run).toMatchObject({ code: 0, stderr: '' });
      const { created } = JSON.parse(run.stdout);
      // The default the description states: `available` when omitted.
      expect(created).toEqual({ id: expect.any(Number), name: expect.stringMatching(/^Made by /), categoryId: 1, status: 'available' });
    },
    120_000,
  );

  test("when NewPet.status carried a `default` (released up to 1.1.0), then openapi-typescript's types would require it", async () => {
    const folder = await freshFolder('openapi-typescript with default');
    const document = JSON.parse(await readFile(DOCUMENT, 'utf8'));
    document.components.schemas.NewPet.properties.status.default = 'available';
    const withDefault = path.join(folder, 'openapi.json');
    await writeFile(withDefault, JSON.stringify(document));
    await GENERATORS[0].generate(withDefault, folder);
    const main = await writeProgram(folder, GENERATORS[0].program);
    expect(compileStrict([main], folder)).toEqual([expect.stringContaining("Property 'status' is missing")]);
  }, 120_000);
});
