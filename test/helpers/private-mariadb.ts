import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createConnection } from 'mysql2/promise';
import { freePort } from './processes';

/** A MariaDB server of a test's own, which the test may pause or kill (never the shared one). */
export interface PrivateMariadb {
  /** `mysql://root@127.0.0.1:<port>/petstore`, a database created empty. */
  url: string;
  /** SIGSTOP: the server keeps its sockets open and answers nothing (a stalled database). */
  pause: () => void;
  /** SIGCONT: the server goes on where it stopped. */
  resume: () => void;
  /** Stops the server (by its PID) and deletes its data directory. */
  stop: () => Promise<void>;
}

/**
 * Installs and starts a throwaway `mariadbd` on a free port, with a data directory of its
 * own under the system temp directory (`--no-defaults`, so the system my.cnf's `mysql` user
 * does not apply; no grant tables: root without a password). Takes about 2 s.
 *
 * @returns the server, once it accepts connections.
 * @throws Error when the server does not come up within 30 s (its log is in the message).
 */
export async function startPrivateMariadb(): Promise<PrivateMariadb> {
  const dir = await mkdtemp(path.join(tmpdir(), 'petstore-mariadb-'));
  const datadir = path.join(dir, 'data');
  await promisify(execFile)('mariadb-install-db', ['--no-defaults', '--user=root', `--datadir=${datadir}`, '--skip-test-db']);
  const port = await freePort();
  const server: ChildProcess = spawn(
    'mariadbd',
    [
      '--no-defaults',
      '--user=root',
      `--datadir=${datadir}`,
      `--port=${port}`,
      `--socket=${path.join(dir, 'mariadb.sock')}`,
      '--bind-address=127.0.0.1',
      '--skip-grant-tables',
      '--skip-log-bin',
      '--innodb-buffer-pool-size=32M',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  server.stderr?.on('data', (chunk) => (log = (log + chunk).slice(-4000)));
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const url = `mysql://root@127.0.0.1:${port}/petstore`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const admin = await createConnection(`mysql://root@127.0.0.1:${port}/`);
      await admin.query('CREATE DATABASE petstore CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci');
      await admin.end();
      break;
    } catch (error) {
      if (Date.now() > deadline || server.exitCode !== null) {
        server.kill('SIGKILL');
        await rm(dir, { recursive: true, force: true });
        throw new Error(`private mariadbd did not start: ${(error as Error).message}\n${log}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    url,
    pause: () => void server.kill('SIGSTOP'),
    resume: () => void server.kill('SIGCONT'),
    stop: async () => {
      server.kill('SIGCONT');
      server.kill('SIGKILL');
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
