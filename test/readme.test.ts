import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ERROR_CATALOGUE } from '../src/errors/error-catalogue';
import { withServer } from './helpers/processes';

const README = path.resolve(__dirname, '..', 'README.md');

/** The first ```bash block after `heading`. */
async function bashBlockAfter(heading: string): Promise<string> {
  const text = await readFile(README, 'utf8');
  const start = text.indexOf(`\n${heading}\n`);
  expect(start).toBeGreaterThan(-1);
  const match = /```bash\n([\s\S]*?)```/.exec(text.slice(start));
  return match![1];
}

describe('README', () => {
  test('when the "Try it" examples are run verbatim against a fresh server, then each gives the documented answer', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'readme-'));
    await withServer({ cwd, env: { NODE_ENV: 'development' } }, async (_server, base) => {
      const script = (await bashBlockAfter('## Try it')).replaceAll('http://127.0.0.1:3000', base);
      const { stdout: output } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], { cwd });
      expect(output).toMatch(/HTTP\/1\.1 201 Created[\s\S]*location: \/v1\/pets\/1[\s\S]*\{"id":1,"name":"Rex","categoryId":1,"status":"available"\}/i);
      expect(output).toContain('[{"id":1,"name":"Rex","categoryId":1,"status":"available"}]');
      expect(output).toMatch(/deprecation: @1795305600\r?\nsunset: Thu, 05 Dec 2030 00:00:00 GMT\r?\nlink: <\/v1\/pets>; rel="successor-version"/i);
      expect(output).toContain('{"data":{"pets":[{"id":"1","name":"Rex","categoryId":1,"status":"available"}]}}');
      expect(output).toContain('{"data":{"createPet":{"id":"2","status":"pending"}}}');
      expect(output).toMatch(/^link: <\/v1\/pets\?limit=1&after=[A-Za-z0-9_-]+>; rel="next"\r?$/im);
      expect(output).toContain('{"data":{"pets":[{"name":"Rex"}]}}'); // the GET with only the key
      expect(output).toContain('"code":"BAD_USER_INPUT"');
      expect(output).toMatch(/HTTP\/1\.1 401 Unauthorized[\s\S]*"code":"UNAUTHENTICATED"/);
      expect(output).toContain('{"code":"NOT_FOUND","message":"No pet has id 999999.","status":404}');
    });
  });

  test('when the Layout section is read, then it names exactly the folders of src/, and the Architecture table the same ones', async () => {
    const text = await readFile(README, 'utf8');
    const layout = text.slice(text.indexOf('\n## Layout\n'));
    const listed = [...layout.matchAll(/^ {2}([a-z-]+)\/ /gm)].map(([, folder]) => folder).sort();
    const folders = (await readdir(path.resolve(__dirname, '..', 'src'), { withFileTypes: true }))
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    expect(listed).toEqual(folders.sort());
    const architecture = text.slice(text.indexOf('\n## Architecture\n'), text.indexOf('\n## Tests\n'));
    const layered = [...architecture.matchAll(/`([a-z-]+)\/`/g)].map(([, folder]) => folder);
    expect([...new Set(layered)].sort()).toEqual(folders.sort());
  });

  test('when the Errors table is read, then it lists exactly the catalogue, with the same statuses', async () => {
    const text = await readFile(README, 'utf8');
    const section = text.slice(text.indexOf('\n## Errors\n'), text.indexOf('\n## API keys\n'));
    const rows = [...section.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)].map(([, code, status]) => [code, Number(status)]);
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(Object.entries(ERROR_CATALOGUE).map(([code, { status }]) => [code, status])));
  });
});
