import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generate } from '@graphql-codegen/cli';
import codegenConfig from '../../examples/frontend/codegen';
import { runBin, runNode, startBuiltServer } from '../helpers/processes';
import { compileProject } from '../helpers/typescript';

/*
 * The client examples of examples/ (examples/README.md), compiled as `tsc -p examples` does and run
 * against the built server as `npm run example:frontend` and `npm run example:rest` run them.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const OUTPUT = path.join(ROOT, 'test', 'output', 'examples');
const FRONTEND = path.join(ROOT, 'dist', 'examples', 'frontend', 'main.js');
const REST_CLIENT = path.join(ROOT, 'dist', 'examples', 'rest-client', 'main.js');
/** The trusted documents manifest graphql-codegen writes for the frontend example. */
const MANIFEST = path.join(ROOT, 'examples', 'frontend', 'gql', 'persisted-documents.json');

let server: Awaited<ReturnType<typeof startBuiltServer>>;
let compiled: string[];
beforeAll(async () => {
  // Nothing left from an earlier build runs: a failed compilation emits nothing.
  await rm(path.dirname(FRONTEND), { recursive: true, force: true });
  await rm(path.dirname(REST_CLIENT), { recursive: true, force: true });
  compiled = compileProject(path.join(ROOT, 'examples', 'tsconfig.json'));
  // With the frontend's manifest, so that its publishable key runs its documents (docs/api-keys.md "Trusted documents").
  server = await startBuiltServer('examples-', { env: { TRUSTED_DOCUMENTS: MANIFEST }, publishableKey: true });
  // More than a page of the frontend example (100), so that it reads a second one.
  for (let i = 1; i <= 105; i++) await createPet(`Seed ${i}`);
}, 60_000);
afterAll(() => server?.stop());

async function createPet(name: string): Promise<void> {
  const response = await fetch(`${server.url}/v1/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, categoryId: 1 }),
  });
  expect(response.status).toBe(201);
}

/** Every pet's name, read through REST's pages of 100. */
async function allPetNames(): Promise<string[]> {
  const names: string[] = [];
  for (let next: string | undefined = '/v1/pets?limit=100'; next;) {
    const response = await fetch(`${server.url}${next}`, { headers: { authorization: `Bearer ${server.apiKey}` } });
    names.push(...((await response.json()) as { name: string }[]).map(({ name }) => name));
    next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
  }
  return names;
}

/** Runs a compiled example against the server, from `cwd` (default: this repository). */
const runExample = (script: string, env: Record<string, string> = {}, cwd = ROOT) =>
  runNode(script, [], { cwd, env: { API_URL: server.url, API_KEY: server.apiKey, ...env } });

describe('the generated code of the examples (`npm run examples:codegen`; `npm run contract` runs it)', () => {
  test("when graphql-codegen's client preset is run with examples/frontend/codegen.ts, then it writes what examples/frontend/gql/ holds", async () => {
    // With saveToFile false, it returns the files instead of writing them.
    const outputs: { filename: string; content: string }[] = await generate(codegenConfig, false);
    expect(outputs.map(({ filename }) => path.relative(ROOT, filename)).sort()).toEqual(
      ['fragment-masking.ts', 'gql.ts', 'graphql.ts', 'index.ts', 'persisted-documents.json'].map((file) => path.join('examples', 'frontend', 'gql', file)),
    );
    for (const { filename, content } of outputs) expect({ filename, content }).toEqual({ filename, content: await readFile(filename, 'utf8') });
  });

  test('when the client preset maps the scalars, then SafeInt is a number and ID a string, in and out', async () => {
    const types = await readFile(path.join(ROOT, 'examples', 'frontend', 'gql', 'graphql.ts'), 'utf8');
    expect(types).toContain('ID: { input: string; output: string; }');
    expect(types).toContain('SafeInt: { input: number; output: number; }');
  });

  test('when openapi-typescript is run on contract/openapi.json, then it writes what examples/rest-client/openapi.d.ts holds', async () => {
    await mkdir(OUTPUT, { recursive: true });
    const fresh = path.join(OUTPUT, 'openapi.d.ts');
    await runBin('openapi-typescript', [path.join(ROOT, 'contract', 'openapi.json'), '-o', fresh]);
    expect(await readFile(path.join(ROOT, 'examples', 'rest-client', 'openapi.d.ts'), 'utf8')).toBe(await readFile(fresh, 'utf8'));
  });

  test('when examples/ is compiled with its tsconfig.json (strict, the root settings), then there is no error', () => {
    expect(compiled).toEqual([]);
  });
});

describe('examples/frontend (Apollo Client, graphql-ws, typed documents)', () => {
  test('when it runs with a publishable key, then it lists two pages by id, merged in the cache, and receives the petCreated event of the pet its server creates', async () => {
    const total = (await allPetNames()).length;
    const run = await runExample(FRONTEND, { API_KEY: server.publishableKey, BACKEND_API_KEY: server.apiKey });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain(`page 1: 100 pets, more: true\npage 2 read: the cache holds ${Math.min(total, 200)} pets\n`);
    const created = /^created: (.*)$/m.exec(run.stdout)![1];
    expect(JSON.parse(created)).toEqual({ __typename: 'Pet', id: expect.stringMatching(/^\d+$/), name: 'Pip', categoryId: 2, status: 'available' });
    expect(run.stdout).toContain(`petCreated: ${created}\n`);
  });

  test('when it runs with a secret key alone, then it works too: a secret key sends the documents themselves', async () => {
    expect(await runExample(FRONTEND)).toMatchObject({ code: 0, stderr: '' });
  });

  test('when the server has no manifest, then a secret key runs it all the same', async () => {
    const plain = await startBuiltServer('examples-plain-');
    try {
      const run = await runNode(FRONTEND, [], { cwd: ROOT, env: { API_URL: plain.url, API_KEY: plain.apiKey } });
      expect(run).toMatchObject({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/^petCreated: /m);
    } finally {
      await plain.stop();
    }
  });

  test("when it runs with a publishable key alone, then the create is refused: a browser's key cannot write", async () => {
    const run = await runExample(FRONTEND, { API_KEY: server.publishableKey });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('lacks the pets:write scope');
  });

  test('when the publishable key sends a document that is not in the manifest, then the server refuses it', async () => {
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.publishableKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ pets { id } }' }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { errors: { extensions: { code: string } }[] }).errors[0].extensions.code).toBe('PERSISTED_QUERY_ID_REQUIRED');
  });
});

describe('examples/rest-client (openapi-typescript + openapi-fetch)', () => {
  test('when it runs, then the create whose answer was lost is retried with its key and stored once, and every page is followed', async () => {
    const run = await runExample(REST_CLIENT);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toContain('attempt 1: fetch failed (simulated: the answer was lost on its way back); retrying with the same Idempotency-Key\n');
    const { id } = JSON.parse(/^created: (.*)$/m.exec(run.stdout)![1]);
    expect(run.stdout).toContain(`the retry returned the same pet as the lost answer: id ${id}\n`);
    const [, listed, pages, name] = /^listed (\d+) pets in (\d+) pages of at most 10; "(.+)" appears 1 time\(s\)$/m.exec(run.stdout)!;
    expect(Number(pages)).toBe(Math.ceil(Number(listed) / 10));
    const names = await allPetNames();
    expect(names).toHaveLength(Number(listed));
    expect(names.filter((stored) => stored === name)).toHaveLength(1);
  });

  test('when API_KEY is not set, then the key is read from data/dev-api-key under the working directory', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'examples-key-'));
    await mkdir(path.join(cwd, 'data'));
    await writeFile(path.join(cwd, 'data', 'dev-api-key'), `${server.apiKey}\n`);
    expect(await runExample(REST_CLIENT, { API_KEY: '' }, cwd)).toMatchObject({ code: 0, stderr: '' });
  });
});

describe('both examples, when they fail', () => {
  test.each([
    ['frontend', FRONTEND],
    ['rest-client', REST_CLIENT],
  ])("when %s is given a wrong key, then it exits 1 with the server's message", async (_name, script) => {
    const run = await runExample(script, { API_KEY: 'pst_wrong' });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Invalid or revoked API key');
  });
});
