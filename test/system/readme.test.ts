import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ERROR_CATALOGUE } from '../../src/errors/error-catalogue';
import { randomBytes } from 'node:crypto';
import MarkdownIt from 'markdown-it';
import { createConnection } from 'mysql2/promise';
import { siblingDatabaseUrl } from '../support/mysql-admin';
import { built, withServer } from '../helpers/processes';
import { TEST_DATABASE_URL, testOnMysql } from '../helpers/test-database';

/** A Markdown file of the repository, e.g. `docs/errors.md`. */
const read = (file: string) => readFile(path.resolve(__dirname, '..', '..', file), 'utf8');

/** The section of Markdown `text` under `heading` (as written, e.g. `## Layout`), up to the next heading of its level or higher. */
function section(text: string, heading: string): string {
  const headings = new MarkdownIt()
    .parse(text, {})
    .flatMap((token, index, tokens) =>
      token.type === 'heading_open' ? [{ line: token.map![0], written: `${token.markup} ${tokens[index + 1].content}` }] : [],
    );
  const at = headings.findIndex(({ written }) => written === heading);
  expect(at).toBeGreaterThan(-1);
  const level = heading.indexOf(' ');
  const next = headings.slice(at + 1).find(({ written }) => written.indexOf(' ') <= level);
  return text.split('\n').slice(headings[at].line, next?.line).join('\n');
}

/** The first ```bash block of `text`. */
function firstBashBlock(text: string): string {
  const match = /```bash\n([\s\S]*?)```/.exec(text);
  expect(match).not.toBeNull();
  return match![1];
}

/** Runs `script` with bash against a fresh built server on the embedded database; its standard output. */
async function runAgainstFreshServer(script: string): Promise<string> {
  const cwd = await mkdtemp(path.join(tmpdir(), 'readme-'));
  let output = '';
  await withServer({ cwd, env: { NODE_ENV: 'development' } }, async (_server, base) => {
    ({ stdout: output } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script.replaceAll('http://127.0.0.1:3000', base)], { cwd }));
  });
  return output;
}

describe('README', () => {
  test('when the "Try it" calls are run verbatim against a fresh server, then each gives the documented answer', async () => {
    const output = await runAgainstFreshServer(firstBashBlock(section(await read('README.md'), '## Try it')));
    expect(output).toMatch(/HTTP\/1\.1 201 Created[\s\S]*location: \/v1\/pets\/1[\s\S]*\{"id":1,"name":"Rex","categoryId":1,"status":"available"\}/i);
    expect(output).toContain('[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]');
    expect(output).toMatch(/\[\{"id":"[A-Za-z0-9_-]+","type":"pet\.created","pet":\{"id":1,"name":"Rex","categoryId":1,"status":"available"\}\}\]/);
    expect(output).toContain('{"data":{"pets":[{"id":"1","name":"Rex","categoryId":1,"status":"available"}]},"extensions":{"cost":');
  });
});

describe('the documentation', () => {
  test('when the block of docs/examples.md is run verbatim against a fresh server, then each call gives the documented answer', async () => {
    const output = await runAgainstFreshServer(firstBashBlock(await read('docs/examples.md')));
    expect(output).toMatch(/HTTP\/1\.1 201 Created[\s\S]*location: \/v1\/pets\/1[\s\S]*\{"id":1,"name":"Rex","categoryId":1,"status":"available"\}/i);
    expect(output).toContain('[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]');
    expect(output).toMatch(/deprecation: @1795305600\r?\nsunset: Thu, 05 Dec 2030 00:00:00 GMT\r?\nlink: <\/v1\/pets>; rel="successor-version"/i);
    expect(output).toContain('{"data":{"pets":[{"id":"1","name":"Rex","categoryId":1,"status":"available"}]},"extensions":{"cost":');
    expect(output).toContain('{"data":{"createPet":{"id":"2","status":"pending"}},"extensions":{"cost":');
    expect(output).toMatch(/^link: <\/v1\/pets\?limit=1&after=[A-Za-z0-9_-]+>; rel="next"\r?$/im);
    expect(output).toContain('{"data":{"pets":[{"name":"Rex"}]},"extensions":{"cost":'); // the GET with only the key
    expect(output).toContain('"code":"BAD_USER_INPUT"');
    expect(output).toMatch(/HTTP\/1\.1 401 Unauthorized[\s\S]*"code":"UNAUTHENTICATED"/);
    expect(output).toContain('{"code":"NOT_FOUND","message":"No pet has id 999999.","status":404}');
  });

  testOnMysql(
    'when the "Running on MySQL" setup is run with names of its own, then the server starts on it and the second terminal\'s commands work',
    async () => {
      const setup = section(await read('docs/operations.md'), '## Running on MySQL');
      const blocks = [...setup.matchAll(/```(sql|bash)\n([\s\S]*?)```/g)].map(([, language, body]) => ({ language, body }));
      expect(blocks.map(({ language }) => language)).toEqual(['sql', 'bash', 'bash']);
      // Our own database, user and password instead of `petstore`, on the test server.
      const name = `petstore_readme_${randomBytes(4).toString('hex')}`;
      const server = new URL(TEST_DATABASE_URL!);
      const own = (block: string) => block.replaceAll('petstore', name).replaceAll('127.0.0.1:3306', server.host);
      const admin = await createConnection({ uri: siblingDatabaseUrl(TEST_DATABASE_URL!, ''), multipleStatements: true });
      try {
        await admin.query(own(blocks[0].body));
        const databaseUrl = /^export DATABASE_URL=(\S+)$/m.exec(own(blocks[1].body))![1];
        expect(own(blocks[2].body)).toContain(`export DATABASE_URL=${databaseUrl}\n`);
        expect(blocks[1].body.trim().split('\n').at(-1)).toBe('npm start');
        const cwd = await mkdtemp(path.join(tmpdir(), 'readme-'));
        await withServer({ cwd, env: { DATABASE_URL: databaseUrl } }, async (_server, base) => {
          const script = own(blocks[2].body)
            .replaceAll('npm run -s apikey --', `node ${built('src/cli/apikey.cli.js')}`)
            .replaceAll('http://127.0.0.1:3000', base);
          const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], { cwd });
          expect(stdout).toBe('[]\n');
        });
      } finally {
        await admin.query(`DROP USER IF EXISTS '${name}'@'%'`);
        await admin.query(`DROP DATABASE IF EXISTS \`${name}\``);
        await admin.end();
      }
    },
  );

  test('when the Layout of docs/architecture.md is read, then it names exactly the folders of src/, and the Layers table the same ones', async () => {
    const text = await read('docs/architecture.md');
    const layout = section(text, '## Layout');
    const listed = [...layout.matchAll(/^ {2}([a-z-]+)\/ /gm)].map(([, folder]) => folder).sort();
    const folders = (await readdir(path.resolve(__dirname, '..', '..', 'src'), { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(listed).toEqual(folders.sort());
    const layered = [...section(text, '## Layers').matchAll(/`([a-z-]+)\/`/g)].map(([, folder]) => folder);
    expect([...new Set(layered)].sort()).toEqual(folders.sort());
  });

  test('when the table of docs/errors.md is read, then it lists exactly the catalogue, with the same statuses', async () => {
    const rows = [...(await read('docs/errors.md')).matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)].map(([, code, status]) => [code, Number(status)]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(Object.entries(ERROR_CATALOGUE).map(([code, { status }]) => [code, status])));
  });
});
