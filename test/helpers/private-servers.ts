import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection as connectTcp } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createDatabase } from '../support/mysql-admin';
import { freePort } from './processes';

/** A server of a test's own (MariaDB, Redis), which the test may pause or kill: never the shared ones. */
export interface PrivateServer {
  /** Where to connect, e.g. `mysql://root@127.0.0.1:<port>/petstore` or `redis://127.0.0.1:<port>`. */
  url: string;
  /** SIGSTOP: the server keeps its sockets open and answers nothing (a stalled server). */
  pause: () => void;
  /** SIGCONT: the server goes on where it stopped. */
  resume: () => void;
  /** Kills the server by its PID (the port then refuses connections) and deletes what it kept on disk. */
  stop: () => Promise<void>;
}

/**
 * Starts `command` and waits until `ready` resolves (tried every 100 ms, for at most 30 s).
 *
 * @param cleanup - run once the process has exited, on `stop()` or a failed start.
 * @throws Error naming the last failure and the end of the server's standard error.
 */
async function startServer(
  command: string,
  args: string[],
  { url, ready, cleanup = async () => undefined }: { url: string; ready: () => Promise<void>; cleanup?: () => Promise<void> },
): Promise<PrivateServer> {
  const server: ChildProcess = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr?.on('data', (chunk) => (log = (log + chunk).slice(-4000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const stop = async () => {
    server.kill('SIGCONT');
    server.kill('SIGKILL');
    await exited;
    await cleanup();
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await ready();
      break;
    } catch (error) {
      if (Date.now() > deadline || server.exitCode !== null) {
        await stop();
        throw new Error(`private ${command} did not start: ${(error as Error).message}\n${log}`, { cause: error });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return { url, pause: () => void server.kill('SIGSTOP'), resume: () => void server.kill('SIGCONT'), stop };
}

/**
 * Installs and starts a throwaway `mariadbd` on a free port, with a data directory of its own
 * under the system temp directory (`--no-defaults`, so the system my.cnf's `mysql` user does
 * not apply; no grant tables: root without a password), and creates an empty database
 * `petstore` in it. Takes about 2 s.
 */
export async function startPrivateMariadb(): Promise<PrivateServer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'petstore-mariadb-'));
  const datadir = path.join(dir, 'data');
  await promisify(execFile)('mariadb-install-db', ['--no-defaults', '--user=root', `--datadir=${datadir}`, '--skip-test-db']);
  const port = await freePort();
  const args = [
    '--no-defaults',
    '--user=root',
    `--datadir=${datadir}`,
    `--port=${port}`,
    `--socket=${path.join(dir, 'mariadb.sock')}`,
    '--bind-address=127.0.0.1',
    '--skip-grant-tables',
    '--skip-log-bin',
    '--innodb-buffer-pool-size=32M',
  ];
  const url = `mysql://root@127.0.0.1:${port}/petstore`;
  return startServer('mariadbd', args, {
    url,
    ready: () => createDatabase(url),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  });
}

/**
 * Starts a throwaway `redis-server`, keeping nothing on disk.
 *
 * @param requestedPort - its port; a free one by default. Given the port of one stopped before, it is that server restarted, empty.
 */
export async function startPrivateRedis(requestedPort?: number): Promise<PrivateServer> {
  const port = requestedPort ?? (await freePort());
  return startServer('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    url: `redis://127.0.0.1:${port}`,
    ready: () =>
      new Promise((resolve, reject) => {
        const socket = connectTcp(port, '127.0.0.1');
        socket.once('connect', () => {
          socket.end();
          resolve();
        });
        socket.once('error', reject);
      }),
  });
}
