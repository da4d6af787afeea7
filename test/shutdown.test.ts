import { request as httpRequest } from 'node:http';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiKey } from '../src/auth/api-key.entity';
import { ApiKeyService } from '../src/auth/api-key.service';
import type { DatabaseConfig } from '../src/config';
import { openDatabase } from '../src/database/open-database';
import { Pet } from '../src/pets/pet.entity';
import { built, freePort, startNode, waitForHttp } from './helpers/processes';
import { TEST_DATABASE_URL, createTestDatabase } from './helpers/test-database';

const DRAIN_SECONDS = 1;
const GRACE_SECONDS = 5;

/** One request of the load: when it started (relative to SIGTERM) and how it ended. */
interface Outcome {
  beforeSignal: boolean;
  status?: number;
  error?: string;
}

/** A POST whose body arrives in two halves: the second only when `finish()` is called. */
function slowCreate(base: string, apiKey: string) {
  const body = JSON.stringify({ name: 'Slowpoke', categoryId: 3 });
  const half = Math.floor(body.length / 2);
  let finish!: () => void;
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(`${base}/v1/pets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.write(body.slice(0, half));
    req.flushHeaders();
    finish = () => req.end(body.slice(half));
  });
  return { response, finish: () => finish() };
}

/**
 * SIGTERM under load (README "Operations"): the built server on the test database, several
 * clients creating and listing pets, one create whose body is still arriving when the server
 * stops accepting.
 */
describe('graceful shutdown', () => {
  test('when SIGTERM arrives mid-load, then no accepted request fails, the slow upload completes, and the process exits 0 within the grace period', async () => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'shutdown-'));
    const owned = TEST_DATABASE_URL ? await createTestDatabase() : null;
    const database: DatabaseConfig = owned?.database ?? { type: 'sqlite', path: path.join(cwd, 'data', 'petstore.sqlite') };
    let apiKey = '';
    if (owned) {
      const dataSource = await openDatabase(database);
      apiKey = (await new ApiKeyService(dataSource.getRepository(ApiKey)).create('shutdown')).key;
      await dataSource.destroy();
    }
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = startNode(built('src/main.js'), {
      cwd,
      env: {
        NODE_ENV: owned ? 'production' : 'development',
        PORT: String(port),
        METRICS_PORT: String(await freePort()),
        SHUTDOWN_DRAIN_SECONDS: String(DRAIN_SECONDS),
        SHUTDOWN_GRACE_SECONDS: String(GRACE_SECONDS),
        RATE_LIMIT_MAX: '1000000',
        ...(owned && { DATABASE_URL: (database as { url: string }).url }),
      },
    });
    try {
      await waitForHttp(`${base}/healthz`);
      if (!owned) apiKey = (await readFile(path.join(cwd, 'data', 'dev-api-key'), 'utf8')).trim();
      const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };

      let signalled = false;
      let exited = false;
      void server.exited.then(() => (exited = true));
      const outcomes: Outcome[] = [];
      const worker = async (n: number) => {
        for (let i = 0; !exited; i++) {
          const outcome: Outcome = { beforeSignal: !signalled };
          try {
            const response = i % 2 === 0
              ? await fetch(`${base}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name: `Load ${n}-${i}`, categoryId: 1 + (i % 20) }) })
              : await fetch(`${base}/v1/pets?limit=5`, { headers });
            await response.arrayBuffer();
            outcome.status = response.status;
          } catch (error) {
            outcome.error = String((error as { cause?: { code?: string } }).cause?.code ?? error);
            if (!signalled) outcomes.push(outcome);
            if (signalled) {
              outcomes.push(outcome);
              await sleep(20);
            }
            continue;
          }
          outcomes.push(outcome);
        }
      };
      const load = Promise.all(Array.from({ length: 8 }, (_, n) => worker(n)));
      await sleep(1000);
      const upload = slowCreate(base, apiKey);
      await sleep(100);

      const signalledAt = Date.now();
      signalled = true;
      server.child.kill('SIGTERM');
      // The server stops accepting after the drain; the upload is still arriving then.
      await sleep((DRAIN_SECONDS + 0.5) * 1000);
      upload.finish();
      const uploaded = await upload.response;
      const code = await server.exited;
      const stoppedAfterMs = Date.now() - signalledAt;
      await load;

      const responses = outcomes.filter((o) => o.status !== undefined);
      const failedResponses = responses.filter((o) => o.status! >= 300);
      const acceptedBeforeSignal = outcomes.filter((o) => o.beforeSignal);
      const refusedAfterClose = outcomes.filter((o) => o.error !== undefined && !o.beforeSignal);
      const counts = {
        requests: outcomes.length,
        succeeded: responses.length - failedResponses.length,
        failedResponses: failedResponses.length,
        startedBeforeSignal: acceptedBeforeSignal.length,
        failedBeforeSignal: acceptedBeforeSignal.filter((o) => o.error !== undefined || o.status! >= 300).length,
        refusedAfterClose: refusedAfterClose.length,
        stoppedAfterMs,
      };
      console.info(`Shutdown under load: ${JSON.stringify(counts)} ${JSON.stringify(failedResponses)}`);

      expect(code).toBe(0);
      expect(stoppedAfterMs).toBeLessThan((DRAIN_SECONDS + GRACE_SECONDS) * 1000);
      expect(uploaded.status).toBe(201);
      expect(counts.failedResponses).toBe(0);
      expect(counts.failedBeforeSignal).toBe(0);
      expect(counts.succeeded).toBeGreaterThan(50);
      // The server went on serving through the drain, after the signal.
      expect(responses.filter((o) => !o.beforeSignal).length).toBeGreaterThan(0);
      // Every request that was refused came after the listener closed: connection refused, never an HTTP error.
      for (const o of refusedAfterClose) expect(o.error).toMatch(/ECONNREFUSED|ECONNRESET|UND_ERR_SOCKET|other side closed/);

      // Nothing half-done: one pet per 201 answer, the upload's included.
      const created = responses.filter((o) => o.status === 201).length + 1;
      const dataSource = await openDatabase(database);
      try {
        expect(await dataSource.getRepository(Pet).count()).toBe(created);
      } finally {
        await dataSource.destroy();
      }
    } finally {
      server.child.kill('SIGKILL');
      await owned?.drop();
    }
  });
});
