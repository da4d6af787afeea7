import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { built, freePort, waitForHttp } from '../helpers/processes';
import { readManifests } from '../helpers/kubernetes-manifests';
import { createTestDatabase, testOnMysql } from '../helpers/test-database';

/**
 * The pod of deploy/kubernetes/ without a cluster (docs/operations.md "Kubernetes"): the built server and the migration
 * Job's command, each with the variables the manifests give it and a read-only root file system (a private mount
 * namespace, as root, where `/` is remounted read-only), on MySQL and Redis.
 */
const ROOT = path.resolve(__dirname, '..', '..');
const { deployment, job, adminKeyJob, environment } = readManifests();
const gateway = deployment.spec!.template.spec!.containers[0];
const migrate = job.spec!.template.spec!.containers[0];
const adminKey = adminKeyJob.spec!.template.spec!.containers[0];

/** Runs `command` in a mount namespace of its own whose root file system is read-only; fails with 97 if it is not. */
function readOnly(command: string[], env: NodeJS.ProcessEnv) {
  const script = 'mount -o remount,bind,ro / && if touch /.writable 2>/dev/null; then exit 97; fi && exec "$@"';
  const child = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', ...command], { cwd: ROOT, env });
  const output = { text: '' };
  child.stdout.on('data', (chunk) => (output.text += chunk));
  child.stderr.on('data', (chunk) => (output.text += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output, exited };
}

/** The image's command line: node with the heap cap in NODE_OPTIONS, as the Dockerfile's CMD and `npm start` give it. */
const nodeOptions = () =>
  execFileSync(process.execPath, [built('src/cli/node-options.cli.js')], { cwd: ROOT })
    .toString()
    .trim();

testOnMysql(
  'when the pod starts read-only before its migration Job has run, then it waits unready, serves once migrated, and drains on SIGTERM',
  async () => {
    const { database, drop } = await createTestDatabase();
    const [port, metricsPort] = [await freePort(), await freePort()];
    const namespace = `k8s-${randomUUID()}`;
    const env = (variables: Record<string, string>): NodeJS.ProcessEnv => ({
      PATH: process.env.PATH,
      ...variables,
      DATABASE_URL: (database as { url: string }).url,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_NAMESPACE: `${namespace}:`,
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
    });
    const podEnv = environment(gateway);
    const base = `http://127.0.0.1:${port}`;
    const server = readOnly([process.execPath, 'dist/src/main.js'], { ...env(podEnv), NODE_OPTIONS: nodeOptions() });
    try {
      await waitForHttp(`${base}${gateway.startupProbe!.httpGet!.path}`);
      const pending = await fetch(`${base}${gateway.readinessProbe!.httpGet!.path}`);
      expect([pending.status, ((await pending.json()) as { message: string }).message]).toEqual([503, 'Database migrations are pending.']);

      const job = readOnly(migrate.command!, env(environment(migrate)));
      expect([await job.exited, job.output.text]).toEqual([0, expect.stringContaining('applied')]);
      let ready = 0;
      for (let tries = 0; ready !== 200 && tries < 50; tries++) {
        await sleep(100);
        ready = (await fetch(`${base}/readyz`)).status;
      }
      expect(ready).toBe(200);

      // Step 4 of the walkthrough: the on-demand Job's key (15 minutes) makes the first client key over the API.
      const bootstrap = readOnly(adminKey.command!, env(environment(adminKey)));
      expect(await bootstrap.exited).toBe(0);
      const adminHeaders = { authorization: `Bearer ${bootstrap.output.text.trim()}`, 'content-type': 'application/json' };
      const made = await fetch(`${base}/v1/admin/api-keys`, { method: 'POST', headers: adminHeaders, body: JSON.stringify({ name: 'first-key' }) });
      expect(made.status).toBe(201);
      const expiresIn = Date.parse(made.headers.get('api-key-expires')!) - Date.now();
      expect(expiresIn).toBeGreaterThan(13 * 60_000);
      expect(expiresIn).toBeLessThanOrEqual(15 * 60_000);
      const headers = { authorization: `Bearer ${((await made.json()) as { key: string }).key}`, 'content-type': 'application/json' };
      const created = await fetch(`${base}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: 'Kube', categoryId: 1 }) });
      expect(created.status).toBe(201);
      const scrape = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect([scrape.status, await scrape.text()]).toEqual([200, expect.stringContaining('http_server_request_duration_seconds')]);

      const sigterm = Date.now();
      server.child.kill('SIGTERM');
      await sleep(500);
      expect((await fetch(`${base}/readyz`)).status).toBe(503);
      expect((await fetch(`${base}/v1/pets`, { headers })).status).toBe(200);
      const drainSeconds = Number(podEnv.SHUTDOWN_DRAIN_SECONDS);
      const graceSeconds = Number(podEnv.SHUTDOWN_GRACE_SECONDS);
      expect(await server.exited).toBe(0);
      const stoppedAfter = (Date.now() - sigterm) / 1000;
      expect(stoppedAfter).toBeGreaterThanOrEqual(drainSeconds);
      expect(stoppedAfter).toBeLessThan(drainSeconds + graceSeconds);
      expect(server.output.text).not.toMatch(/EROFS|read-only/i);
    } finally {
      server.child.kill('SIGKILL');
      await drop();
    }
  },
  60_000,
);
