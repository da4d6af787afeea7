import { createRequire } from 'node:module';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
const SCHEMA = path.join(ROOT, 'schema.graphql');
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

/*
 * Relay (docs/graphql.md "Relay"): relay-compiler, with its defaults but for CommonJS JavaScript artifacts and no
 * source control, compiles a `@refetchable` fragment on Pet against schema.graphql into a temporary folder; relay-runtime
 * then runs the generated queries, the refetch one through `node(id:)`, against the built server.
 */

/** The fixture: a refetchable fragment on Pet and a query that spreads it. */
const RELAY_DOCUMENTS = `
graphql\`
  fragment PetDetails_pet on Pet @refetchable(queryName: "PetRefetchQuery") {
    name
    status
  }
\`;
graphql\`
  query PetListQuery {
    pets(limit: 5) {
      id
      ...PetDetails_pet
    }
  }
\`;
`;

/** The part of relay-runtime (which ships no types) this test calls. */
interface RelayRuntime {
  Environment: new (config: { network: unknown; store: unknown }) => { lookup: (selector: unknown) => { data: any } };
  Network: { create: (fetch: (request: { text: string | null }, variables: Record<string, unknown>) => Promise<unknown>) => unknown };
  Store: new (source: unknown) => unknown;
  RecordSource: new () => unknown;
  fetchQuery: (environment: unknown, query: unknown, variables: Record<string, unknown>) => { toPromise: () => Promise<any> };
  getSelector: (fragment: unknown, reference: unknown) => unknown;
}

describe('Relay: a refetchable fragment compiled by relay-compiler', () => {
  let server: Awaited<ReturnType<typeof startBuiltServer>>;
  let folder: string;
  beforeAll(async () => {
    server = await startBuiltServer('relay-');
    folder = await mkdtemp(path.join(tmpdir(), 'relay-'));
  });
  afterAll(async () => {
    await server?.stop();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  test('when its generated refetch query runs through relay-runtime, then node(id:) brings the pet back into the fragment', async () => {
    await mkdir(path.join(folder, 'src'));
    await mkdir(path.join(folder, 'generated'));
    await writeFile(path.join(folder, 'src', 'pet-details.js'), RELAY_DOCUMENTS);
    await writeFile(path.join(folder, 'schema.graphql'), await readFile(SCHEMA));
    // noSourceControl: otherwise relay-compiler runs `git add` on what it writes.
    const config = {
      src: './src',
      schema: './schema.graphql',
      language: 'javascript',
      artifactDirectory: './generated',
      eagerEsModules: false,
      noSourceControl: true,
    };
    await writeFile(path.join(folder, 'relay.config.json'), JSON.stringify(config));
    await runBin('relay-compiler', [], folder);

    const load = createRequire(path.join(folder, 'generated', 'index.js'));
    const fragment = load('./PetDetails_pet.graphql');
    const refetchQuery = load('./PetRefetchQuery.graphql');
    expect(fragment.metadata.refetch).toMatchObject({
      fragmentPathInResult: ['node'],
      identifierInfo: { identifierField: 'id', identifierQueryVariableName: 'id' },
    });
    expect(refetchQuery.params.text).toMatch(/node\(id: \$id\)/);

    const created = await fetch(`${server.url}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Refetched by Relay', categoryId: 1, status: 'pending' }),
    });
    expect(created.status).toBe(201);
    const pet = (await created.json()) as { id: number };

    const relay = createRequire(__filename)('relay-runtime') as RelayRuntime;
    const sent: string[] = [];
    const network = relay.Network.create(async ({ text }, variables) => {
      sent.push(text ?? '');
      const response = await fetch(`${server.url}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json', accept: 'application/graphql-response+json' },
        body: JSON.stringify({ query: text, variables }),
      });
      return response.json();
    });
    const environment = new relay.Environment({ network, store: new relay.Store(new relay.RecordSource()) });
    const refetched = await relay.fetchQuery(environment, refetchQuery, { id: String(pet.id) }).toPromise();
    expect(sent).toEqual([refetchQuery.params.text]);
    // Masked: the fragment's fields are read through it; `__id` is the record Relay stored the pet under, its id.
    expect(refetched.node.__id).toBe(String(pet.id));
    expect(environment.lookup(relay.getSelector(fragment, refetched.node)).data).toEqual({ name: 'Refetched by Relay', status: 'pending', id: String(pet.id) });

    const missing = await relay.fetchQuery(environment, refetchQuery, { id: '987654321' }).toPromise();
    expect(missing).toEqual({ node: null });
  }, 120_000);
});
