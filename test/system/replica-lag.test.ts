import { setTimeout as sleep } from 'node:timers/promises';
import type { Database } from '../../src/database/database';
import type { NodeState } from '../../src/database/database-node';
import { openDatabase } from '../../src/database/open-database';
import { createMetrics } from '../../src/observability/metrics.registry';
import { PetStatus } from '../../src/pets/pet-status.enum';
import { PetRepository } from '../../src/pets/pet.repository';
import { type ReplicatedPair, startReplicatedPair } from '../support/mariadb-topology';
import { describeOnMysql } from '../helpers/test-database';
import { DATABASE_DEADLINES } from '../../src/limits';

const MAX_LAG_SECONDS = 2;

/**
 * DATABASE_REPLICA_MAX_LAG_SECONDS on a real asynchronous replica (test/support/mariadb-topology.ts):
 * a replica that falls behind (MASTER_DELAY holds its SQL thread back for real) or stops
 * applying leaves the read rotation, reads go to the primary meanwhile, and it comes back once
 * it has caught up.
 */
describeOnMysql('a read replica that lags', () => {
  let pair: ReplicatedPair;
  let primary: Database;
  let pets: PetRepository;

  beforeAll(async () => {
    pair = await startReplicatedPair();
    primary = await openDatabase({ type: 'mysql', url: pair.primary.url, replicaUrls: [pair.replica.url], replicaMaxLagSeconds: MAX_LAG_SECONDS });
    pets = new PetRepository(primary);
  }, 60_000);
  afterAll(async () => {
    await primary?.close();
    await pair?.stop();
  }, 30_000);

  /** Checks the nodes until the replica's state matches, for at most `timeoutMs`; returns it. */
  async function replicaBecomes(expected: Partial<NodeState>, timeoutMs = 10_000): Promise<NodeState> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const replica = (await primary.checkNodes())[1];
      if (Object.entries(expected).every(([key, value]) => replica[key as keyof NodeState] === value)) return replica;
      if (Date.now() > deadline) throw new Error(`the replica stayed ${JSON.stringify(replica)}, not ${JSON.stringify(expected)}`);
      await sleep(DATABASE_DEADLINES.nodeCheckIntervalMs / 4);
    }
  }

  /** Replication on the replica with its SQL thread held `seconds` behind the primary's events. */
  async function delayReplica(seconds: number): Promise<void> {
    await pair.replica.query('STOP SLAVE');
    await pair.replica.query(`CHANGE MASTER TO MASTER_DELAY = ${seconds}`);
    await pair.replica.query('START SLAVE');
  }

  /** Creates pets on the primary for `ms` and reads each back at once; returns how many reads missed. */
  async function createAndReadBack(ms: number): Promise<{ created: number; missed: number }> {
    let created = 0;
    let missed = 0;
    for (const end = Date.now() + ms; Date.now() < end; created++) {
      const pet = await pets.create({ name: `Lag${created}`, categoryId: 1, status: PetStatus.available });
      if (!(await pets.findById(pet.id))) missed++;
    }
    return { created, missed };
  }

  test('when the replica falls further behind than the bound, then it leaves the rotation, every read finds a pet just created, and it rejoins once caught up', async () => {
    await replicaBecomes({ ready: true, state: 'ok' });
    await delayReplica(MAX_LAG_SECONDS + 4);
    await pets.create({ name: 'Behind', categoryId: 1, status: PetStatus.available });
    const lagging = await replicaBecomes({ ready: false, state: 'lagging' });
    expect(lagging.lagSeconds).toBeGreaterThan(MAX_LAG_SECONDS);
    const metrics = createMetrics();
    metrics.watchDatabase(primary);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/petstore_db_node_ready\{node="replica1",role="replica"\} 0/);
    expect(Number(/petstore_db_replica_lag_seconds\{node="replica1"\} (\d+)/.exec(text)?.[1])).toBeGreaterThan(MAX_LAG_SECONDS);
    // Out of the rotation: reads go to the primary, which has everything.
    const { created, missed } = await createAndReadBack(2000);
    expect([created > 10, missed]).toEqual([true, 0]);

    await delayReplica(0);
    await pair.waitCaughtUp();
    // Back in the rotation, within the bound (under load, a check can land while an event is applied and read 1 or 2 s).
    expect((await replicaBecomes({ ready: true, state: 'ok' })).lagSeconds).toBeLessThanOrEqual(MAX_LAG_SECONDS);
  }, 60_000);

  test('when the replica stops applying (SQL thread stopped), then it leaves the rotation as unboundedly behind, and rejoins when restarted', async () => {
    await replicaBecomes({ ready: true });
    await pair.stopSqlThread();
    expect(await replicaBecomes({ ready: false, state: 'replication stopped' })).toMatchObject({ lagSeconds: null });
    const { missed } = await createAndReadBack(1000);
    expect(missed).toBe(0);

    await pair.startSqlThread();
    await pair.waitCaughtUp();
    await replicaBecomes({ ready: true, state: 'ok' });
  }, 60_000);
});
