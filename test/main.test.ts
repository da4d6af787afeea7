import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { built, freePort, runNode, withServer } from './helpers/processes';
import { createProcessDatabase, testOnMysql } from './helpers/test-database';

/** `npm start` end to end: the built server as a real process, configured by its environment. */
describe('the server process (dist/src/main.js)', () => {
  const main = () => built('src/main.js');

  test('when the configuration is bad, then it stops at once naming every bad key', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const result = await runNode(main(), [], {
      cwd,
      env: { PORT: 'abc', NODE_ENV: 'staging', DATABASE_URL: 'postgres://db/x', LOG_LEVEL: 'loud' },
    });
    expect(result.code).toBe(1);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    for (const key of ['PORT', 'NODE_ENV', 'DATABASE_URL', 'LOG_LEVEL']) expect(lines[0]).toContain(`${key}:`);
    expect(result.stderr).not.toMatch(/\s+at /); // no stack trace
  });

  test('when the database cannot be reached, then it retries a bounded number of times and stops with one clear line, no password, no stack', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const closedPort = await freePort();
    const started = Date.now();
    const result = await runNode(main(), [], {
      cwd,
      env: { DATABASE_URL: `mysql://app:s3cret@127.0.0.1:${closedPort}/petstore`, DATABASE_CONNECT_ATTEMPTS: '3', METRICS_PORT: String(await freePort()) },
    });
    expect(result.code).toBe(1);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^Cannot reach the database at mysql://127\\.0\\.0\\.1:${closedPort}/petstore after 3 attempt\\(s\\): .*ECONNREFUSED`)),
    ]);
    const retries = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((line) => line.msg === 'database not reachable yet');
    expect(retries.map((line) => [line.attempt, line.retryInMs])).toEqual([
      [1, 500],
      [2, 1000],
    ]);
    expect(result.stderr + result.stdout).not.toContain('s3cret');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });

  test('when started on the embedded default, then it creates one development key, serves with it, refuses a second process, and stops cleanly on SIGTERM', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const first = await withServer({ cwd, env: { NODE_ENV: 'development' } }, async (server, base) => {
      const keyFile = path.join(cwd, 'data', 'dev-api-key');
      const key = (await readFile(keyFile, 'utf8')).trim();
      expect(key).toMatch(/^pst_/);
      expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
      expect(server.output.stdout).toContain(key);

      const response = await fetch(`${base}/v1/pets`, { headers: { authorization: `Bearer ${key}` } });
      expect(response.status).toBe(200);

      const cli = await runNode(built('src/cli/apikey.cli.js'), ['create', 'x'], { cwd });
      expect(cli.code).toBe(1);
      expect(cli.stderr).toMatch(/in use by another process/);
    });
    expect(first).toBe(0);

    // A second start finds the key and creates no other.
    const again = await withServer({ cwd, env: { NODE_ENV: 'development' } }, async (server) => {
      expect(server.output.stdout).not.toContain('Development API key');
    });
    expect(again).toBe(0);
  });

  test('when NODE_ENV is production, then no key is created, and one log line lists where every surface is', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const exit = await withServer({ cwd, env: { NODE_ENV: 'production', LOG_LEVEL: 'info' } }, async (server, base) => {
      expect(server.output.stdout).not.toContain('Development API key');
      for (let waited = 0; !server.output.stdout.includes(`${base}/graphql`) && waited < 5_000; waited += 50)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const started = server.output.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg: string })
        .filter((line) => line.msg.includes(`${base}/graphql`));
      expect(started).toHaveLength(1);
      for (const path of ['/', '/graphql', '/v1', '/docs', '/v1/openapi.json', '/healthz']) expect(started[0].msg).toContain(` ${base}${path}`);
      expect(started[0].msg).toMatch(/metrics http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect((await fetch(`${base}/`)).status).toBe(200);
      await expect(stat(path.join(cwd, 'data', 'dev-api-key'))).rejects.toThrow();
      expect((await fetch(`${base}/v1/pets`)).status).toBe(401);
    });
    expect(exit).toBe(0);
  });

  testOnMysql('when DATABASE_URL names a MySQL database, then it migrates it, creates no key and serves', async () => {
    const { cwd, env, drop } = await createProcessDatabase('main-');
    try {
      await withServer({ cwd, env: { NODE_ENV: 'development', ...env } }, async (server, base) => {
        expect(server.output.stdout).not.toContain('Development API key');
        expect((await fetch(`${base}/v1/pets`)).status).toBe(401);
      });
    } finally {
      await drop();
    }
  });
});
