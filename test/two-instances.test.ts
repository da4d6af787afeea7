import { mkdtemp } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApiKey } from '../src/auth/api-key.entity';
import { ApiKeyService } from '../src/auth/api-key.service';
import { openDatabase } from '../src/database/open-database';
import { Pet } from '../src/pets/pet.entity';
import { built, freePort, startNode, waitForHttp } from './helpers/processes';
import { TEST_DATABASE_URL, createTestDatabase } from './helpers/test-database';

const REDIS_URL = 'redis://127.0.0.1:6379';
const RATE_LIMIT_MAX = 8;

// MySQL and Redis only: defined in the MariaDB run, which .ci/run always makes (with Redis up).
const onMysql = TEST_DATABASE_URL ? test : () => undefined;

/** Scale-out (README "Operations"): two built servers on one MySQL database and one Redis. */
describe('two instances', () => {
  onMysql('when two instances start together on a fresh database, then each serves what the other wrote, shares the rate limit and replays the other\'s Idempotency-Key', async () => {
    const { database, drop } = await createTestDatabase();
    const cwd = await mkdtemp(path.join(tmpdir(), 'two-'));
    const namespace = `two-instances-${randomUUID()}:`;
    const start = async () => {
      const port = await freePort();
      const env = {
        NODE_ENV: 'production',
        PORT: String(port),
        METRICS_PORT: String(await freePort()),
        DATABASE_URL: (database as { url: string }).url,
        REDIS_URL,
        RATE_LIMIT_NAMESPACE: namespace,
        RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
      };
      return { server: startNode(built('src/main.js'), { cwd, env }), base: `http://127.0.0.1:${port}` };
    };
    const [a, b] = await Promise.all([start(), start()]);
    try {
      // Both migrate the same fresh database at once (the migration lock lets one do it).
      await Promise.all([waitForHttp(`${a.base}/healthz`), waitForHttp(`${b.base}/healthz`)]);
      for (const { base } of [a, b]) expect((await fetch(`${base}/readyz`)).status).toBe(200);

      const dataSource = await openDatabase(database);
      const apiKeys = new ApiKeyService(dataSource.getRepository(ApiKey));
      const writer = (await apiKeys.create('writer')).key;
      const limited = (await apiKeys.create('limited')).key;
      const headers = (key: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json', ...extra });

      // Written through A, read through B.
      const created = await fetch(`${a.base}/v1/pets`, { method: 'POST', headers: headers(writer), body: JSON.stringify({ name: 'Shared', categoryId: 4 }) });
      expect(created.status).toBe(201);
      const pet = (await created.json()) as { id: number; name: string };
      const listed = await (await fetch(`${b.base}/v1/pets?limit=100`, { headers: headers(writer) })).json();
      expect(listed).toContainEqual(pet);
      const viaGraphql = await fetch(`${b.base}/graphql`, { method: 'POST', headers: headers(writer), body: JSON.stringify({ query: '{ pets(limit: 100) { id name } }' }) });
      expect(((await viaGraphql.json()) as { data: { pets: unknown[] } }).data.pets).toContainEqual({ id: String(pet.id), name: 'Shared' });

      // An Idempotency-Key used on A is replayed by B: one pet, the same answer.
      const idempotent = (base: string) =>
        fetch(`${base}/v1/pets`, { method: 'POST', headers: headers(writer, { 'idempotency-key': 'two-instances-1' }), body: JSON.stringify({ name: 'Once', categoryId: 5 }) });
      const first = await idempotent(a.base);
      const second = await idempotent(b.base);
      expect([first.status, second.status]).toEqual([201, 201]);
      expect(await second.json()).toEqual(await first.json());
      expect(await dataSource.getRepository(Pet).countBy({ name: 'Once' })).toBe(1);

      // One budget for the key across both instances: alternate between them until it runs out.
      const statuses: number[] = [];
      for (let i = 0; i < RATE_LIMIT_MAX + 2; i++) {
        const response = await fetch(`${(i % 2 === 0 ? a : b).base}/v1/pets?limit=1`, { headers: headers(limited) });
        await response.arrayBuffer();
        statuses.push(response.status);
      }
      expect(statuses).toEqual([...Array(RATE_LIMIT_MAX).fill(200), 429, 429]);
      await dataSource.destroy();
    } finally {
      a.server.child.kill('SIGTERM');
      b.server.child.kill('SIGTERM');
      expect(await Promise.all([a.server.exited, b.server.exited])).toEqual([0, 0]);
      await drop();
    }
  });
});
