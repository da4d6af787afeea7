import { ApiKey } from '../src/auth/api-key.entity';
import type { DatabaseConfig } from '../src/config';
import { openDatabase } from '../src/database/open-database';
import { buildMetricsServer } from '../src/operations/metrics.server';
import { createMetrics } from '../src/operations/metrics.registry';
import { PetStatus } from '../src/pets/pet-status.enum';
import { Pet } from '../src/pets/pet.entity';
import { type TestApp, request, startTestApp } from './helpers/test-app';
import { TEST_DATABASE_URL, createTestDatabase } from './helpers/test-database';

// MySQL only: defined in the MariaDB run, which .ci/run always makes.
const onMysql = TEST_DATABASE_URL ? test : () => undefined;

/**
 * DATABASE_REPLICA_URLS (README "Operations"). The "replica" here is a second database that
 * nothing copies into, so every answer shows where it was read from.
 */
describe('read replicas', () => {
  onMysql('when a replica is configured, then reads go to it, writes to the primary, and Idempotency-Key replays read the primary', async () => {
    const primary = await createTestDatabase();
    const replica = await createTestDatabase();
    const replicaSource = await openDatabase(replica.database);
    const primarySource = await openDatabase(primary.database);
    const metrics = createMetrics();
    const url = (database: DatabaseConfig) => (database as { url: string }).url;
    let t: TestApp | undefined;
    try {
      t = await startTestApp({
        database: { type: 'mysql', url: url(primary.database), replicaUrls: [url(replica.database)] },
        observe: { metrics },
      });
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
      expect(text).toMatch(/petstore_db_pool_connections\{node="master",state="limit"\} \d+/);
      expect(text).toMatch(/petstore_db_pool_connections\{node="slave0",state="total"\} [1-9]/);
    } finally {
      await t?.close();
      await replicaSource.destroy();
      await primarySource.destroy();
      await replica.drop();
    }
    // startTestApp does not drop a database it was given.
    await primary.drop();
  });
});
