import { setTimeout as sleep } from 'node:timers/promises';
import { built, freePort, startNode } from './processes';
import type { LoadTarget } from './steady-load';

/** Built servers of a test's own on a database it names, for the fault suites (topology-faults, feed-faults). */

/** A rate limit that steady load never reaches. */
const UNLIMITED = '1000000000';

/** A built server of the test's own: a load target that can be stopped. */
export interface Instance extends LoadTarget {
  /** SIGTERM, then SIGKILL after 15 s; resolves once it has exited (at once when it already has). */
  stop(): Promise<void>;
  /** kill -9: no shutdown, no lease given up; resolves once it has exited. */
  kill(): Promise<void>;
}

/**
 * Starts the built server in `cwd` with the environment of the fault runs (production, unlimited rate, short
 * shutdown) plus `env` (DATABASE_URL, DATABASE_REPLICA_URLS, REDIS_URL, LOG_LEVEL…); does not wait for it.
 */
export async function startInstance(name: string, cwd: string, env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  const server = startNode(built('src/main.js'), {
    cwd,
    env: {
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      RATE_LIMIT_MAX: UNLIMITED,
      RATE_LIMIT_UNAUTHENTICATED_MAX: UNLIMITED,
      DATABASE_REPLICA_MAX_LAG_SECONDS: '2',
      DATABASE_CONNECT_ATTEMPTS: '3',
      SHUTDOWN_GRACE_SECONDS: '2',
      ...env,
    },
  });
  const exited = () => server.child.exitCode !== null || server.child.signalCode !== null;
  const stop = async () => {
    if (exited()) return;
    server.child.kill('SIGTERM');
    const timer = setTimeout(() => server.child.kill('SIGKILL'), 15_000);
    await server.exited;
    clearTimeout(timer);
  };
  const kill = async () => {
    if (exited()) return;
    server.child.kill('SIGKILL');
    await server.exited;
  };
  return { name, base: `http://127.0.0.1:${port}`, server, stop, kill };
}

/**
 * Waits until the instance's /readyz answers 200.
 *
 * @throws Error with its output when it exits first or is not ready within `timeoutMs`.
 */
export async function waitReady(instance: Instance, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string;
  for (;;) {
    if (instance.server.child.exitCode !== null)
      throw new Error(
        `${instance.name} exited (${instance.server.child.exitCode}) while starting:\n${instance.server.output.stderr}${instance.server.output.stdout}`,
      );
    try {
      const response = await fetch(`${instance.base}/readyz`, { signal: AbortSignal.timeout(3000) });
      last = `${response.status} ${await response.text()}`;
      if (response.status === 200) return;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`${instance.name} not ready within ${timeoutMs} ms (last: ${last}):\n${instance.server.output.stderr}`);
    await sleep(200);
  }
}
