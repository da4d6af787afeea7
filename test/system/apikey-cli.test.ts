import type { DatabaseConfig } from '../../src/database/database-config';
import { built, runNode } from '../helpers/processes';
import { type HttpResult, request, startTestApp } from '../helpers/test-app';
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

  async function answerWith(key: string): Promise<HttpResult> {
    const t = await startTestApp({ database, createKey: false });
    try {
      return await request(t, 'GET', '/v1/pets', { apiKey: key });
    } finally {
      await t.app.close();
      await t.dataSource.destroy();
    }
  }

  async function statusWith(key: string): Promise<number> {
    return (await answerWith(key)).status;
  }

  /** `list --json`, parsed. */
  async function listed(): Promise<Array<Record<string, unknown>>> {
    const result = await cli('list', '--json');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    return JSON.parse(result.stdout);
  }

  /** Within a minute of `ms` from now. */
  const inAbout = (ms: number) => (iso: unknown) => Math.abs(Date.parse(iso as string) - (Date.now() + ms)) < 60_000;

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
    expect(again.stderr).toBe(`apikey: No active key has id ${id}.\n`);
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

  test('when a publishable key is created with an origin, a lifetime and a rate limit, then it is printed alone and has them', async () => {
    const created = await cli('create', 'shop-web', '--kind', 'publishable', '--origin', 'https://a.example', '--expires-in', '7d', '--rate-limit', '50');
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^pst_pk_[A-Za-z0-9_-]{49}\n$/);
    const answer = await answerWith(created.stdout.trim());
    expect(answer.status).toBe(200);
    expect(answer.headers.get('ratelimit-policy')).toMatch(/^"default";q=50;/);
    expect(inAbout(7 * 86_400_000)(answer.headers.get('api-key-expires'))).toBe(true);
    const row = (await listed()).find((key) => key.name === 'shop-web')!;
    expect(row).toMatchObject({ kind: 'publishable', scopes: ['pets:read'], origins: ['https://a.example'], revokedAt: null });
    expect(inAbout(7 * 86_400_000)(row.expiresAt)).toBe(true);
  });

  test.each([
    [['--kind', 'publishable', '--scope', 'pets:write'], /^apikey: a publishable key cannot hold pets:write: it may hold pets:read\n$/],
    [['--kind', 'publishable', '--no-expiry'], /^apikey: a publishable key must expire\n$/],
    [['--scope', 'pets:delete'], /^apikey: unknown scope "pets:delete": the scopes are pets:read, pets:write, keys:admin, webhooks:admin\n$/],
    [['--origin', 'https://a.example'], /^apikey: origins apply to publishable keys only\n$/],
  ])('when create is called with %p, then exit 2 with one line on stderr, and nothing is stored', async (flags, message) => {
    const before = (await listed()).length;
    const result = await cli('create', 'refused', ...flags);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr).toMatch(message);
    expect(await listed()).toHaveLength(before);
  });

  test.each([
    [['--expires-in', '10w'], /"10w" is not a duration: expected a whole number with s, m, h or d, e\.g\. 90d/],
    [['--expires-in', '1.5h'], /"1\.5h" is not a duration/],
    [['--kind', 'publishable', '--origin', 'https://a.example/shop'], /"https:\/\/a\.example\/shop" is not an origin/],
    [['--expires-in', '7d', '--no-expiry'], /--expires-in and --no-expiry exclude each other/],
  ])('when create is given the bad value %p, then exit 2 naming it, and nothing is stored', async (flags, message) => {
    const before = (await listed()).length;
    const result = await cli('create', 'refused', ...flags);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    expect(result.stderr.split('\n')[0]).toMatch(message);
    expect(await listed()).toHaveLength(before);
  });

  test('when a key is rolled with an overlap, then the new key is printed, both work, and the old one expires at the overlap end', async () => {
    const created = await cli('create', 'to-roll', '--scope', 'pets:read');
    const oldKey = created.stdout.trim();
    const id = (await listed()).find((key) => key.name === 'to-roll')!.id as number;

    const rolled = await cli('roll', String(id), '--overlap', '1h');
    expect(rolled.code).toBe(0);
    expect(rolled.stdout).toMatch(/^pst_sk_[A-Za-z0-9_-]{49}\n$/);
    const newKey = rolled.stdout.trim();
    expect(newKey).not.toBe(oldKey);
    expect(rolled.stderr).toMatch(new RegExp(`^key ${id} expires at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z; the new key is \\d+\\n$`));

    expect(await statusWith(oldKey)).toBe(200);
    expect(await statusWith(newKey)).toBe(200);
    const keys = await listed();
    expect(inAbout(3_600_000)(keys.find((key) => key.id === id)!.expiresAt)).toBe(true);
    const successor = keys.filter((key) => key.name === 'to-roll' && key.id !== id);
    expect(successor).toEqual([expect.objectContaining({ kind: 'secret', scopes: ['pets:read'], revokedAt: null })]);
    expect(inAbout(90 * 86_400_000)(successor[0].expiresAt)).toBe(true);

    expect(await cli('roll', String(id), '--overlap', '10w')).toMatchObject({ code: 2, stdout: '' });
    const successorId = successor[0].id as number;
    expect((await cli('revoke', String(successorId))).code).toBe(0);
    expect(await cli('roll', String(successorId))).toMatchObject({ code: 1, stdout: '', stderr: `apikey: No active key has id ${successorId}.\n` });
  });

  test('when keys are listed as JSON, then each is exactly the documented fields, times ISO 8601 or null', async () => {
    await cli('create', 'no-expiry', '--no-expiry');
    const keys = await listed();
    expect(keys.length).toBeGreaterThan(0);
    const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
    for (const key of keys) {
      expect(Object.keys(key)).toEqual(['id', 'name', 'kind', 'scopes', 'origins', 'createdAt', 'expiresAt', 'lastUsedAt', 'revokedAt']);
      expect(key).toMatchObject({ id: expect.any(Number), name: expect.any(String), scopes: expect.any(Array), origins: expect.any(Array) });
      expect(['secret', 'publishable']).toContain(key.kind);
      expect(key.createdAt).toMatch(iso);
      for (const time of ['expiresAt', 'lastUsedAt', 'revokedAt']) {
        if (key[time] !== null) expect(key[time]).toMatch(iso);
      }
    }
    expect(keys.find((key) => key.name === 'no-expiry')).toMatchObject({ kind: 'secret', scopes: ['pets:read', 'pets:write'], origins: [], expiresAt: null });
    expect(keys.find((key) => key.name === 'alice')?.revokedAt).toEqual(expect.stringMatching(iso));
    // The key text and its hash are never listed.
    expect(JSON.stringify(keys)).not.toMatch(/pst_|keyHash|key_hash/);
  });

  test('when keys are created, rolled and revoked, or refused, through the CLI, then the audit trail records each as channel cli, never a secret', async () => {
    const created = await cli('create', 'auditor', '--scope', 'keys:admin');
    expect(created.code).toBe(0);
    const adminKey = created.stdout.trim();
    const id = (await listed()).find((key) => key.name === 'auditor')!.id as number;
    expect((await cli('create', 'audited', '--origin', 'https://a.example')).code).toBe(2);
    const toRoll = (await cli('create', 'audited-roll')).stdout.trim();
    const rollId = (await listed()).find((key) => key.name === 'audited-roll')!.id as number;
    const rolled = await cli('roll', String(rollId), '--overlap', '1m');
    expect(rolled.code).toBe(0);
    expect((await cli('revoke', String(rollId))).code).toBe(0);
    expect((await cli('revoke', String(rollId))).code).toBe(1);

    const t = await startTestApp({ database, createKey: false });
    let trail: HttpResult;
    try {
      trail = await request(t, 'GET', '/v1/admin/audit-events?limit=100', { apiKey: adminKey });
    } finally {
      await t.app.close();
      await t.dataSource.destroy();
    }
    expect(trail.status).toBe(200);
    const cliEvent = { channel: 'cli', actorKeyId: null, requestId: null, address: null, targetType: 'api_key' };
    // Newest first.
    expect(trail.body.slice(0, 6)).toEqual([
      expect.objectContaining({ ...cliEvent, action: 'api_key.revoke', targetId: String(rollId), outcome: 'NOT_FOUND' }),
      expect.objectContaining({ ...cliEvent, action: 'api_key.revoke', targetId: String(rollId), outcome: 'success' }),
      expect.objectContaining({ ...cliEvent, action: 'api_key.roll', targetId: String(rollId), outcome: 'success' }),
      expect.objectContaining({ ...cliEvent, action: 'api_key.create', targetId: String(rollId), outcome: 'success' }),
      expect.objectContaining({ ...cliEvent, action: 'api_key.create', targetId: null, outcome: 'BAD_USER_INPUT' }),
      expect.objectContaining({ ...cliEvent, action: 'api_key.create', targetId: String(id), outcome: 'success' }),
    ]);
    const text = JSON.stringify(trail.body);
    for (const secret of [adminKey, toRoll, rolled.stdout.trim()]) expect(text).not.toContain(secret);
  });

  test('when asked for help, then every command is listed', async () => {
    const result = await cli('--help');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/create[\s\S]*list[\s\S]*revoke/);
  });
});
