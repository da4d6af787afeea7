import type { DatabaseConfig } from '../../src/database/database-config';
import { built, runNode } from '../helpers/processes';
import { request, startTestApp } from '../helpers/test-app';
import { createProcessDatabase } from '../helpers/test-database';

/**
 * `npm run apikey -- …` end to end: the built CLI on the run's database (the embedded file
 * in a temporary working directory, or a fresh MariaDB database), checked against the real app.
 */
describe('apikey CLI', () => {
  let cwd: string;
  let env: Record<string, string>;
  let database: DatabaseConfig;
  let drop: () => Promise<void> = async () => undefined;
  const cli = (...args: string[]) => runNode(built('src/cli/apikey.cli.js'), args, { cwd, env });

  beforeAll(async () => {
    ({ cwd, database, env, drop } = await createProcessDatabase('apikey-cli-'));
  });
  afterAll(() => drop());

  async function statusWith(key: string): Promise<number> {
    const t = await startTestApp({ database, createKey: false });
    try {
      return (await request(t, 'GET', '/v1/pets', { apiKey: key })).status;
    } finally {
      await t.app.close();
      await t.dataSource.destroy();
    }
  }

  test('when a key is created, used, listed and revoked, then it works until revoked and 401 after', async () => {
    const created = await cli('create', 'alice');
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^pst_sk_[A-Za-z0-9_-]{49}\n$/);
    const key = created.stdout.trim();

    expect(await statusWith(key)).toBe(200);

    const listed = await cli('list');
    expect(listed.code).toBe(0);
    expect(listed.stdout).not.toContain(key);
    const row = listed.stdout.split('\n').find((line) => line.includes('\talice\t'));
    expect(row).toContain(`…${key.slice(-4)}`);
    expect(row).toMatch(/\tactive$/);
    const id = row!.split('\t')[0];

    const revoked = await cli('revoke', id);
    expect(revoked).toMatchObject({ code: 0, stdout: '' });
    expect(await statusWith(key)).toBe(401);
    expect((await cli('list')).stdout).not.toMatch(new RegExp(`^${id}\\t.*\\tactive$`, 'm'));

    const again = await cli('revoke', id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`no active key has id ${id}`);
  });

  test.each([
    [['revoke', 'abc'], /'abc' is invalid for argument 'id'\. must be a positive integer\./],
    [['create'], /missing required argument 'name'/],
    [['create', ''], /name must be 1 to 100 characters/],
    [['frobnicate'], /unknown command 'frobnicate'/],
  ])('when called with %p, then exit 2 (a usage error) and a clear message', async (args, message) => {
    const result = await cli(...args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
  });

  test('when asked for help, then every command is listed', async () => {
    const result = await cli('--help');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/create[\s\S]*list[\s\S]*revoke/);
  });
});
