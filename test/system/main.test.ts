import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer } from 'node:net';
import { METRICS_PORT_OFFSET } from '../../src/config';
import { built, freePort, runNode, startNode, waitForHttp, waitForOutput, withServer } from '../helpers/processes';
import { siblingDatabaseUrl } from '../support/mysql-admin';
import { TEST_DATABASE_URL, createProcessDatabase, testOnMysql } from '../helpers/test-database';

/** Whether a TCP port on 127.0.0.1 can be bound now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
      .once('error', () => resolve(false))
      .listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port whose default metrics port (port + 6464) is free too. */
async function portWithFreeMetricsPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + METRICS_PORT_OFFSET <= 65535 && (await canListen(port + METRICS_PORT_OFFSET))) return port;
  }
}

/** The processes below `pid` (children first, then theirs), from /proc. */
function descendantsOf(pid: number): number[] {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return children.flatMap((child) => [child, ...descendantsOf(child)]);
}

/** Whether a process is still there (a zombie counts as gone). */
function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

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

  test.each([
    ['missing', null, /^Invalid configuration: TRUSTED_DOCUMENTS: manifests\/documents\.json: cannot be read \(ENOENT\)$/],
    ['not JSON', '{"format": ', /^Invalid configuration: TRUSTED_DOCUMENTS: manifests\/documents\.json: not JSON \(.+\)$/],
    [
      'of a wrong hash',
      JSON.stringify({ ['0'.repeat(64)]: '{ pets { id } }' }),
      /^Invalid configuration: TRUSTED_DOCUMENTS: manifests\/documents\.json: 0{64} is not the SHA-256 of its document: regenerate the manifest$/,
    ],
  ])('when a trusted document manifest is %s, then it stops with one line naming the file and the problem', async (_what, text, line) => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    if (text !== null) {
      await mkdir(path.join(cwd, 'manifests'));
      await writeFile(path.join(cwd, 'manifests', 'documents.json'), text);
    }
    const result = await runNode(main(), [], { cwd, env: { TRUSTED_DOCUMENTS: 'manifests/documents.json' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(line.source.replace('$', '\n$')));
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
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

  /** Runs the server on `url`, which refuses for good: one line on stderr matching `line`, exit 1, no retry. */
  async function expectRefusedAtOnce(url: string, line: RegExp) {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const result = await runNode(main(), [], { cwd, env: { DATABASE_URL: url, METRICS_PORT: String(await freePort()) } });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(line)]);
    expect(result.stdout).not.toContain('database not reachable yet'); // no retry
    expect(result.stderr + result.stdout).not.toContain('s3cret');
  }

  test('when the database host does not resolve, then it stops at once, without retrying, with one line that says what to do', async () => {
    await expectRefusedAtOnce(
      'mysql://app:s3cret@no-such-host.invalid:3306/petstore',
      /^Cannot use the database at mysql:\/\/no-such-host\.invalid:3306\/petstore: .*ENOTFOUND.*check the host name in DATABASE_URL\.$/,
    );
  });

  testOnMysql.each([
    [
      'an unknown database',
      () => siblingDatabaseUrl(TEST_DATABASE_URL!, `petstore_missing_${process.pid}`),
      /^Cannot use the database at mysql:\/\/.*\/petstore_missing_\d+: Unknown database '.*'\. Create it and grant your user access to it \(CREATE DATABASE, GRANT: docs\/operations\.md "Running on MySQL"\)/,
    ],
    [
      'a wrong password',
      () => Object.assign(new URL(TEST_DATABASE_URL!), { password: 's3cret' }).toString(),
      /^Cannot use the database at mysql:\/\/.*: Access denied for user .*\. Check the user and password in DATABASE_URL, or create that user/,
    ],
  ])('when MySQL refuses for good (%s), then it stops at once, without retrying, with one line that says what to do', async (_case, url, line) => {
    await expectRefusedAtOnce(url(), line);
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

    // A second start finds the key, creates no other, and says where it is, never what.
    const key = (await readFile(path.join(cwd, 'data', 'dev-api-key'), 'utf8')).trim();
    const again = await withServer({ cwd, env: { NODE_ENV: 'development' } }, async (server) => {
      expect(server.output.stdout).not.toContain('shown once');
      expect(server.output.stdout).not.toContain(key);
      expect(server.output.stdout).toContain('Development API key: in data/dev-api-key (API_KEY=$(cat data/dev-api-key))\n');
    });
    expect(again).toBe(0);
    expect((await readFile(path.join(cwd, 'data', 'dev-api-key'), 'utf8')).trim()).toBe(key);
  });

  test('when `npm start` gets SIGTERM, then the server it started stops cleanly and no process is left behind', async () => {
    // package.json's start script in a package of its own (so that its data/ is this test's), with
    // dist/ and node_modules/ linked; its build step is left out: npm run test:system has built dist/.
    const root = path.resolve(__dirname, '..', '..');
    const { scripts } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const start = scripts.start.replace(/^tsc -b && /, '');
    expect(start).not.toBe(scripts.start);
    const cwd = await mkdtemp(path.join(tmpdir(), 'npm-start-'));
    await writeFile(path.join(cwd, 'package.json'), JSON.stringify({ name: 'npm-start-test', private: true, scripts: { start } }));
    await symlink(path.join(root, 'dist'), path.join(cwd, 'dist'));
    await symlink(path.join(root, 'node_modules'), path.join(cwd, 'node_modules'));
    const port = await freePort();
    const { DATABASE_URL: _d, TEST_DATABASE_URL: _t, ...env } = process.env;
    const npm = spawn('npm', ['start'], {
      cwd,
      env: { ...env, NODE_ENV: 'development', LOG_LEVEL: 'info', PORT: String(port), METRICS_PORT: String(await freePort()) },
    });
    let output = '';
    npm.stdout.on('data', (chunk) => (output += chunk));
    npm.stderr.on('data', (chunk) => (output += chunk));
    const npmExited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
    let below: number[] = [];
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`);
      below = descendantsOf(npm.pid!);
      expect(below.length).toBeGreaterThan(0);
      npm.kill('SIGTERM');
      await npmExited;
      const deadline = Date.now() + 10_000;
      while (below.some(isRunning) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      expect(below.filter(isRunning)).toEqual([]);
      expect(output).toContain('stopped cleanly');
    } finally {
      for (const pid of below) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
      npm.kill('SIGKILL');
    }
  });

  test('when the first start fails (its port is taken), then it writes no key, and the first start that serves shows one', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as { port: number };
    try {
      const failed = await runNode(main(), [], { cwd, env: { NODE_ENV: 'development', PORT: String(port), METRICS_PORT: String(await freePort()) } });
      expect(failed.code).toBe(1);
      expect(failed.stderr).toMatch(/^PORT is in use/);
    } finally {
      taken.close();
    }
    await expect(stat(path.join(cwd, 'data', 'dev-api-key'))).rejects.toThrow();
    const exit = await withServer({ cwd, env: { NODE_ENV: 'development' } }, async (server, base) => {
      const key = (await readFile(path.join(cwd, 'data', 'dev-api-key'), 'utf8')).trim();
      expect(server.output.stdout).toContain(`Development API key (shown once, also saved to data/dev-api-key):\n\n    ${key}\n`);
      expect((await fetch(`${base}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    });
    expect(exit).toBe(0);
  });

  test('when a second instance is started with only its own PORT, then both serve, each with its metrics on PORT + 6464; a port taken names its variable in one line', async () => {
    const [first, second] = [await portWithFreeMetricsPort(), await portWithFreeMetricsPort()];
    const firstDir = await mkdtemp(path.join(tmpdir(), 'main-'));
    const secondDir = await mkdtemp(path.join(tmpdir(), 'main-'));
    // No METRICS_PORT: the default is what is tested.
    const a = startNode(main(), { cwd: firstDir, env: { PORT: String(first) } });
    const b = startNode(main(), { cwd: secondDir, env: { PORT: String(second) } });
    try {
      for (const port of [first, second]) {
        await waitForHttp(`http://127.0.0.1:${port}/healthz`);
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
        await waitForHttp(`http://127.0.0.1:${port + METRICS_PORT_OFFSET}/metrics`);
        expect((await fetch(`http://127.0.0.1:${port + METRICS_PORT_OFFSET}/metrics`)).status).toBe(200);
      }
      const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
      const samePort = await runNode(main(), [], { cwd, env: { PORT: String(first), METRICS_PORT: String(await freePort()) } });
      expect(samePort.code).toBe(1);
      expect(samePort.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(new RegExp(`^PORT is in use: 127\\.0\\.0\\.1:${first} is taken by another process`)),
      ]);
      const sameMetrics = await runNode(main(), [], { cwd, env: { PORT: String(await freePort()), METRICS_PORT: String(first + METRICS_PORT_OFFSET) } });
      expect(sameMetrics.code).toBe(1);
      expect(sameMetrics.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(new RegExp(`^METRICS_PORT is in use: 127\\.0\\.0\\.1:${first + METRICS_PORT_OFFSET} is taken by another process`)),
      ]);
    } finally {
      a.child.kill('SIGTERM');
      b.child.kill('SIGTERM');
    }
    expect([await a.exited, await b.exited]).toEqual([0, 0]);
  });

  test('when a server was killed with SIGKILL, then the next start takes its lock over at once and serves the same data', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const port = await freePort();
    const env = { NODE_ENV: 'development', PORT: String(port), METRICS_PORT: String(await freePort()) };
    const crashed = startNode(main(), { cwd, env });
    await waitForHttp(`http://127.0.0.1:${port}/healthz`);
    await waitForOutput(crashed, 'dev-api-key'); // written once it listens
    const key = (await readFile(path.join(cwd, 'data', 'dev-api-key'), 'utf8')).trim();
    crashed.child.kill('SIGKILL');
    await crashed.exited;
    // Its lock is still there, naming a process that is gone.
    const owner = JSON.parse(await readFile(path.join(cwd, 'data', 'petstore.sqlite.lock', 'owner.json'), 'utf8'));
    expect(owner).toEqual({ pid: crashed.child.pid, hostname: expect.any(String) });

    const exit = await withServer({ cwd, env: { NODE_ENV: 'development' } }, async (server, base) => {
      expect(server.output.stderr).toBe('');
      expect((await fetch(`${base}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
      // A living holder is still respected.
      const cli = await runNode(built('src/cli/apikey.cli.js'), ['list'], { cwd });
      expect(cli.stderr).toMatch(/in use by another process/);
    });
    expect(exit).toBe(0);
    await expect(stat(path.join(cwd, 'data', 'petstore.sqlite.lock'))).rejects.toThrow(); // released on SIGTERM
  });

  test('when NODE_ENV is production without DATABASE_URL or EMBEDDED_DATABASE, then it refuses to start with one line naming both', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const result = await runNode(main(), [], { cwd, env: { NODE_ENV: 'production' } });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'Invalid configuration: DATABASE_URL: NODE_ENV=production needs an explicit database: set DATABASE_URL, or EMBEDDED_DATABASE=true to run on the embedded file data/petstore.sqlite\n',
    );
    expect(result.stdout).toBe('');
    await expect(stat(path.join(cwd, 'data'))).rejects.toThrow(); // no database file was made
  });

  test('when NODE_ENV is production and DATABSE_URL is set, then it refuses to start naming the typo and its suggestion', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const result = await runNode(main(), [], { cwd, env: { NODE_ENV: 'production', DATABSE_URL: 'mysql://user:pass@db:3306/petstore' } });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^Invalid configuration: DATABSE_URL is not a setting; did you mean DATABASE_URL\?; DATABASE_URL: NODE_ENV=production needs/);
    expect(result.stderr).not.toMatch(/\s+at /);
  });

  test('when DATABSE_URL is set outside production, then it starts on the embedded file and logs one JSON warn line naming it', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const exit = await withServer({ cwd, env: { DATABSE_URL: 'mysql://user:pass@db:3306/petstore', LOG_LEVEL: 'info' } }, async (server, base) => {
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const warnings = server.output.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string; variable?: string; suggestion?: string })
        .filter((line) => line.variable !== undefined);
      expect(warnings).toEqual([
        expect.objectContaining({
          level: 40,
          variable: 'DATABSE_URL',
          suggestion: 'DATABASE_URL',
          msg: 'DATABSE_URL is not a setting; did you mean DATABASE_URL?',
        }),
      ]);
      expect(server.output.stderr).toBe('');
    });
    expect(exit).toBe(0);
  });

  test('when NODE_ENV is production, then no key is created, every line on stdout is one JSON event, and one lists where every surface is', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'main-'));
    const exit = await withServer({ cwd, env: { NODE_ENV: 'production', EMBEDDED_DATABASE: 'true', LOG_LEVEL: 'info' } }, async (server, base) => {
      expect(server.output.stdout).not.toContain('Development API key');
      for (let waited = 0; !server.output.stdout.includes(`${base}/graphql`) && waited < 5_000; waited += 50)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const started = server.output.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { msg: string })
        .filter((line) => line.msg.includes(`${base}/graphql`));
      expect(started).toHaveLength(1);
      for (const path of ['/', '/graphql', '/v1/pets', '/docs', '/v1/openapi.json', '/healthz']) expect(started[0].msg).toContain(` ${base}${path}`);
      expect(started[0].msg).toContain(` ${base.replace(/^http/, 'ws')}/graphql`);
      expect(started[0].msg).toMatch(/metrics http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      expect((await fetch(`${base}/`)).status).toBe(200);
      await expect(stat(path.join(cwd, 'data', 'dev-api-key'))).rejects.toThrow();
      expect((await fetch(`${base}/v1/pets`)).status).toBe(401);
      for (const line of server.output.stdout.trim().split('\n')) expect(() => JSON.parse(line)).not.toThrow();
    });
    expect(exit).toBe(0);
  });

  testOnMysql('when DATABASE_URL names a MySQL database, then it migrates it, creates no key and serves', async () => {
    const { cwd, env, drop } = await createProcessDatabase('main-');
    try {
      await withServer({ cwd, env: { NODE_ENV: 'development', ...env } }, async (server, base) => {
        expect(server.output.stdout).not.toContain('Development API key');
        expect(server.output.stdout).not.toContain('dev-api-key');
        expect((await fetch(`${base}/v1/pets`)).status).toBe(401);
      });
      await expect(stat(path.join(cwd, 'data', 'dev-api-key'))).rejects.toThrow();
    } finally {
      await drop();
    }
  });

  testOnMysql(
    "when a development key file left from the embedded database is there on MySQL, then start-up says in one line it is not this database's",
    async () => {
      const { cwd, env, drop } = await createProcessDatabase('main-');
      try {
        // An embedded run first: it writes data/dev-api-key for the embedded database.
        await withServer({ cwd, env: { NODE_ENV: 'development' } }, async () => undefined);
        const key = (await readFile(path.join(cwd, 'data', 'dev-api-key'), 'utf8')).trim();
        await withServer({ cwd, env: { NODE_ENV: 'development', ...env } }, async (server, base) => {
          await waitForOutput(server, 'dev-api-key');
          const lines = server.output.stdout.split('\n').filter((line) => line.includes('dev-api-key'));
          expect(lines).toEqual([expect.stringMatching(/^data\/dev-api-key holds no key of this database .*npm run -s apikey -- create <name>$/)]);
          expect(server.output.stdout).not.toContain(key);
          expect((await fetch(`${base}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
        });
        expect((await readFile(path.join(cwd, 'data', 'dev-api-key'), 'utf8')).trim()).toBe(key); // left as it is
      } finally {
        await drop();
      }
    },
  );
});
