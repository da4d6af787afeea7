import { type ChildProcess, spawn } from 'node:child_process';
import { createConnection } from 'node:net';
import { freePort } from './processes';

/** A Redis server of a test's own, which the test may pause or kill (never the shared one). */
export interface PrivateRedis {
  /** `redis://127.0.0.1:<port>` */
  url: string;
  /** SIGSTOP: the server keeps its sockets open and answers nothing (a stalled Redis). */
  pause: () => void;
  /** SIGCONT: the server goes on where it stopped. */
  resume: () => void;
  /** Stops the server by its PID (SIGKILL); the port then refuses connections. */
  stop: () => Promise<void>;
}

/**
 * Starts a throwaway `redis-server` on a free port, keeping nothing on disk.
 *
 * @returns the server, once it accepts connections.
 * @throws Error when it does not come up within 10 s.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const server: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
  const deadline = Date.now() + 10_000;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.end();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) break;
    if (Date.now() > deadline || server.exitCode !== null) {
      server.kill('SIGKILL');
      throw new Error('private redis-server did not start');
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    pause: () => void server.kill('SIGSTOP'),
    resume: () => void server.kill('SIGCONT'),
    stop: async () => {
      server.kill('SIGCONT');
      server.kill('SIGKILL');
      await exited;
    },
  };
}
