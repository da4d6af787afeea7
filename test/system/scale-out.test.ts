import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildApp } from '../../src/app';
import { ApiKey } from '../../src/auth/api-key.entity';
import { ApiKeyService } from '../../src/auth/api-key.service';
import type { DatabaseConfig } from '../../src/database/database-config';
import { MIGRATIONS } from '../../src/database/data-source';
import { openDatabase } from '../../src/database/open-database';
import { buildMetricsServer } from '../../src/observability/metrics.server';
import { createMetrics } from '../../src/observability/metrics.registry';
import { PetStatus } from '../../src/pets/pet-status.enum';
import { Pet } from '../../src/pets/pet.entity';
import { built, freePort, startNode, waitForHttp } from '../helpers/processes';
import { startTcpProxy } from '../helpers/tcp-proxy';
import { type TestApp, request, startTestApp, testConfig } from '../helpers/test-app';
import { createProcessDatabase, createTestDatabase, testOnMysql } from '../helpers/test-database';
import { DATABASE_DEADLINES } from '../../src/limits';

/**
 * Several instances on one database (docs/operations.md "Scale-out notes"): concurrent migrations, migrating
 * outside start-up, read replicas, and two built servers sharing MySQL and Redis.
 */

// Several instances need MySQL (and Redis): testOnMysql. SQLite has the embedded file lock,
// which keeps a second process out.
describe('migrations with several instances', () => {
  testOnMysql('when three instances open the same fresh database at once, then all start and each migration is applied once', async () => {
    const { database, drop } = await createTestDatabase();
    try {
      const instances = await Promise.all([openDatabase(database), openDatabase(database), openDatabase(database)]);
      try {
        const applied = await instances[0].writer.query('SELECT name FROM migrations ORDER BY id');
        expect(applied.map((row: { name: string }) => row.name)).toEqual(MIGRATIONS.map((migration) => migration.name));
        for (const instance of instances) expect(await instance.writer.showMigrations()).toBe(false);
      } finally {
        await Promise.all(instances.map((instance) => instance.close()));
      }
    } finally {
      await drop();
    }
  });
});

describe('DATABASE_MIGRATE_ON_START=false', () => {
  test('when the server starts without migrating, then /readyz says migrations are pending until they are applied (and the next check after that)', async () => {
    const { database, drop } = await createTestDatabase();
    const opened = await openDatabase(database, { migrate: false });
    const app = await buildApp({ config: testConfig(), database: opened });
    try {
      const pending = await app.inject({ method: 'GET', url: '/readyz' });
      expect([pending.statusCode, pending.json()]).toEqual([
        503,
        {
          code: 'SERVICE_UNAVAILABLE',
          message: 'Database migrations are pending.',
          status: 503,
          nodes: [expect.objectContaining({ name: 'primary', ready: true })],
        },
      ]);
      await opened.writer.runMigrations();
      // Probes share one database check per DATABASE_DEADLINES.nodeCheckIntervalMs: the next one after that sees the migrations.
      await sleep(DATABASE_DEADLINES.nodeCheckIntervalMs);
      expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    } finally {
      await app.close();
      await opened.close();
      await drop();
    }
  });
});

/** The URL of a MySQL test database. */
const url = (database: DatabaseConfig) => (database as { url: string }).url;

/**
 * DATABASE_REPLICA_URLS (docs/operations.md "Scale-out notes"). The "replica" here is a second database that
 * nothing copies into, so every answer shows where it was read from.
 */
describe('read replicas', () => {
  testOnMysql('when a replica is configured, then reads go to it, writes to the primary, and Idempotency-Key replays read the primary', async () => {
    const primary = await createTestDatabase();
    const replica = await createTestDatabase();
    const replicaDatabase = await openDatabase(replica.database);
    const primaryDatabase = await openDatabase(primary.database);
    const [replicaSource, primarySource] = [replicaDatabase.writer, primaryDatabase.writer];
    const metrics = createMetrics();
    let t: TestApp | undefined;
    try {
      t = await startTestApp({
        database: { type: 'mysql', url: url(primary.database), replicaUrls: [url(replica.database)] },
        observe: { metrics },
      });
      // The replica joins the read rotation at its first check (within DATABASE_DEADLINES.nodeCheckIntervalMs).
      for (let tries = 0; !(await request(t, 'GET', '/readyz', { apiKey: null })).body.nodes[1].ready; tries++) {
        if (tries > 30) throw new Error('the replica never joined the read rotation');
        await sleep(100);
      }
      // Keys are read on the replica too: copy the new key there, as replication would.
      const onPrimary = t.dataSource.createQueryRunner('master');
      await replicaSource.getRepository(ApiKey).insert(await onPrimary.manager.find(ApiKey));
      await onPrimary.release();

      const created = await request(t, 'POST', '/v1/pets', { body: { name: 'Fresh', categoryId: 1 } });
      expect(created.status).toBe(201);
      // Written to the primary only; the list comes from the replica, which has not got it (yet).
      expect(await replicaSource.getRepository(Pet).count()).toBe(0);
      expect(await primarySource.getRepository(Pet).count()).toBe(1);
      expect((await request(t, 'GET', '/v1/pets')).body).toEqual([]);
      expect((await request(t, 'GET', `/v1/pets/${created.body.id}`)).status).toBe(404);
      await replicaSource.getRepository(Pet).insert({ name: 'OnReplica', categoryId: 2, status: PetStatus.sold });
      expect((await request(t, 'GET', '/v1/pets')).body).toEqual([expect.objectContaining({ name: 'OnReplica' })]);

      // A replay must find the first pet although the replica does not have it.
      const once = () => request(t!, 'POST', '/v1/pets', { body: { name: 'Once', categoryId: 3 }, headers: { 'idempotency-key': 'replica-1' } });
      const first = await once();
      const second = await once();
      expect(second.status).toBe(201);
      expect(second.body).toEqual(first.body);
      expect(await primarySource.getRepository(Pet).countBy({ name: 'Once' })).toBe(1);

      expect((await request(t, 'GET', '/readyz', { apiKey: null })).status).toBe(200);
      const server = await buildMetricsServer(metrics);
      const text = (await server.inject({ method: 'GET', url: '/metrics' })).body;
      await server.close();
      expect(text).toMatch(/petstore_db_pool_connections\{node="primary",state="limit"\} \d+/);
      expect(text).toMatch(/petstore_db_pool_connections\{node="replica1",state="total"\} [1-9]/);
      expect(text).toMatch(/petstore_db_node_ready\{node="primary",role="primary"\} 1/);
      expect(text).toMatch(/petstore_db_node_ready\{node="replica1",role="replica"\} 1/);
    } finally {
      await t?.close();
      await replicaDatabase.close();
      await primaryDatabase.close();
      await replica.drop();
    }
    // startTestApp does not drop a database it was given.
    await primary.drop();
  });
});

/** Polls /readyz until `replica1` is in (or out of) the read rotation; throws after 5 s. */
async function untilReplicaReady(t: TestApp, ready: boolean): Promise<void> {
  for (const deadline = Date.now() + 5000; ; await sleep(100)) {
    const { body } = await request(t, 'GET', '/readyz', { apiKey: null });
    if ((body as { nodes: { ready: boolean }[] }).nodes[1].ready === ready) return;
    if (Date.now() > deadline) throw new Error(`replica1 never became ready=${ready}: ${JSON.stringify(body)}`);
  }
}

describe('a read replica that goes away', () => {
  testOnMysql(
    'when the replica is unreachable for 2 s under reads, then every read is answered 200 from the primary meanwhile, /readyz stays 200 naming it, and it rejoins the rotation within 3 s',
    async () => {
      const primary = await createTestDatabase();
      const replica = await createTestDatabase();
      const replicaUrl = new URL(url(replica.database));
      const proxy = await startTcpProxy({ host: replicaUrl.hostname, port: Number(replicaUrl.port || 3306) });
      replicaUrl.host = `127.0.0.1:${proxy.port}`;
      const replicaDatabase = await openDatabase(replica.database);
      const replicaSource = replicaDatabase.writer;
      let t: TestApp | undefined;
      try {
        t = await startTestApp({ database: { type: 'mysql', url: url(primary.database), replicaUrls: [replicaUrl.toString()] } });
        await replicaSource.getRepository(ApiKey).insert(await t.dataSource.getRepository(ApiKey).find());
        // A pet on the replica only: seen exactly while reads go to the replica.
        await replicaSource.getRepository(Pet).insert({ name: 'OnReplica', categoryId: 1, status: PetStatus.sold });
        await untilReplicaReady(t, true);
        expect((await request(t, 'GET', '/v1/pets')).body).toEqual([expect.objectContaining({ name: 'OnReplica' })]);

        const answers: { status: number; at: number }[] = [];
        let reading = true;
        const readers = Array.from({ length: 4 }, async () => {
          while (reading) {
            const answer = await request(t!, 'GET', '/v1/pets');
            answers.push({ status: answer.status, at: performance.now() });
          }
        });
        await sleep(300);
        proxy.cut();
        // Seen by the next check of the nodes (one per DATABASE_DEADLINES.nodeCheckIntervalMs).
        await sleep(DATABASE_DEADLINES.nodeCheckIntervalMs + 200);
        const during = await request(t, 'GET', '/readyz', { apiKey: null });
        await sleep(800);
        proxy.restore();
        const back = performance.now();
        await sleep(3500);
        reading = false;
        await Promise.all(readers);

        expect(during.status).toBe(200);
        expect((during.body as { nodes: unknown[] }).nodes).toEqual([
          expect.objectContaining({ name: 'primary', ready: true }),
          expect.objectContaining({ name: 'replica1', role: 'replica', ready: false, state: 'unreachable' }),
        ]);
        // A read whose replica connection fails is read again on the primary: every one is a 200.
        expect(answers.length).toBeGreaterThan(100);
        expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
        expect(answers.filter((answer) => answer.at > back + 3000).length).toBeGreaterThan(0);
        console.log(`replica outage: ${answers.length} reads, all 200`);
        // Back in the rotation: the replica's own pet is listed again.
        await untilReplicaReady(t, true);
        expect((await request(t, 'GET', '/v1/pets')).body).toEqual([expect.objectContaining({ name: 'OnReplica' })]);
      } finally {
        proxy.restore();
        await t?.close();
        await replicaDatabase.close();
        await proxy.close();
        await replica.drop();
        await primary.drop();
      }
    },
    30_000,
  );
});

const REDIS_URL = 'redis://127.0.0.1:6379';
const RATE_LIMIT_MAX = 8;

/** Scale-out (docs/operations.md "Scale-out notes"): two built servers on one MySQL database and one Redis. */
describe('two instances', () => {
  testOnMysql(
    "when two instances start together on a fresh database, then each serves what the other wrote, shares the rate limit and replays the other's Idempotency-Key",
    async () => {
      const { cwd, database, env: databaseEnv, drop } = await createProcessDatabase('two-');
      const namespace = `two-instances-${randomUUID()}:`;
      const start = async () => {
        const port = await freePort();
        const env = {
          NODE_ENV: 'production',
          PORT: String(port),
          METRICS_PORT: String(await freePort()),
          ...databaseEnv,
          REDIS_URL,
          REDIS_NAMESPACE: namespace,
          RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
        };
        return { server: startNode(built('src/main.js'), { cwd, env }), base: `http://127.0.0.1:${port}` };
      };
      const [a, b] = await Promise.all([start(), start()]);
      try {
        // Both migrate the same fresh database at once (the migration lock lets one do it).
        await Promise.all([waitForHttp(`${a.base}/healthz`), waitForHttp(`${b.base}/healthz`)]);
        for (const { base } of [a, b]) expect((await fetch(`${base}/readyz`)).status).toBe(200);

        const opened = await openDatabase(database);
        const apiKeys = new ApiKeyService(opened);
        const writer = (await apiKeys.create('writer')).key;
        const limited = (await apiKeys.create('limited')).key;
        const headers = (key: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json', ...extra });

        // Written through A, read through B.
        const created = await fetch(`${a.base}/v1/pets`, { method: 'POST', headers: headers(writer), body: JSON.stringify({ name: 'Shared', categoryId: 4 }) });
        expect(created.status).toBe(201);
        const pet = (await created.json()) as { id: number; name: string };
        const listed = await (await fetch(`${b.base}/v1/pets?limit=100`, { headers: headers(writer) })).json();
        expect(listed).toContainEqual(pet);
        const viaGraphql = await fetch(`${b.base}/graphql`, {
          method: 'POST',
          headers: headers(writer),
          body: JSON.stringify({ query: '{ pets(limit: 100) { id name } }' }),
        });
        expect(((await viaGraphql.json()) as { data: { pets: unknown[] } }).data.pets).toContainEqual({ id: String(pet.id), name: 'Shared' });

        // An Idempotency-Key used on A is replayed by B: one pet, the same answer.
        const idempotent = (base: string) =>
          fetch(`${base}/v1/pets`, {
            method: 'POST',
            headers: headers(writer, { 'idempotency-key': 'two-instances-1' }),
            body: JSON.stringify({ name: 'Once', categoryId: 5 }),
          });
        const first = await idempotent(a.base);
        const second = await idempotent(b.base);
        expect([first.status, second.status]).toEqual([201, 201]);
        expect(await second.json()).toEqual(await first.json());
        expect(await opened.writer.getRepository(Pet).countBy({ name: 'Once' })).toBe(1);

        // One budget for the key across both instances: alternate between them until it runs out.
        const statuses: number[] = [];
        for (let i = 0; i < RATE_LIMIT_MAX + 2; i++) {
          const response = await fetch(`${(i % 2 === 0 ? a : b).base}/v1/pets?limit=1`, { headers: headers(limited) });
          await response.arrayBuffer();
          statuses.push(response.status);
        }
        expect(statuses).toEqual([...Array(RATE_LIMIT_MAX).fill(200), 429, 429]);
        await opened.close();
      } finally {
        a.server.child.kill('SIGTERM');
        b.server.child.kill('SIGTERM');
        expect(await Promise.all([a.server.exited, b.server.exited])).toEqual([0, 0]);
        await drop();
      }
    },
  );
});
