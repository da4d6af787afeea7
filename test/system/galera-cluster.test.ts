import type { Database } from '../../src/database/database';
import { withinDeadline } from '../../src/database/database-deadline';
import { MIGRATIONS } from '../../src/database/data-source';
import { openDatabase } from '../../src/database/open-database';
import { toAppError } from '../../src/errors/error-catalogue';
import { PetStatus } from '../../src/pets/pet-status.enum';
import { PetRepository } from '../../src/pets/pet.repository';
import { type GaleraCluster, type MariadbNode, startGaleraCluster } from '../support/mariadb-topology';
import { describeOnMysql } from '../helpers/test-database';

/**
 * The service's database layer on a real 3-node Galera cluster (test/support/mariadb-topology.ts),
 * in-process: migrations at start on two nodes at once, reads after writes across nodes, and a
 * node that loses the primary component. The built servers under faults are in
 * test/topology-faults.test.ts.
 */
describeOnMysql('on a Galera cluster', () => {
  let cluster: GaleraCluster;
  let node1: MariadbNode, node2: MariadbNode;

  beforeAll(async () => {
    cluster = await startGaleraCluster();
    [node1, node2] = cluster.nodes;
  }, 90_000);
  afterAll(() => cluster?.stop(), 30_000);

  /** The URL of database `name` on `node`. */
  const on = (node: MariadbNode, name: string) => Object.assign(new URL(node.url), { pathname: `/${name}` }).toString();

  test('when two instances start together on two nodes of an empty database, 10 rounds, then both start every time and each migration is applied once', async () => {
    for (let round = 1; round <= 10; round++) {
      const name = `migrate_round_${round}`;
      await node1.query(`CREATE DATABASE ${name}`);
      const opened = await Promise.allSettled([openDatabase({ type: 'mysql', url: on(node1, name) }), openDatabase({ type: 'mysql', url: on(node2, name) })]);
      const started = opened.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
      try {
        expect(opened.filter((result) => result.status === 'rejected')).toEqual([]);
        const applied = await started[0].writer.query('SELECT name FROM migrations ORDER BY id');
        expect(applied.map((row: { name: string }) => row.name)).toEqual(MIGRATIONS.map((migration) => migration.name));
      } finally {
        await Promise.all(started.map((database) => database.close()));
      }
    }
  }, 240_000);

  describe('with the service on node1 and node2', () => {
    let one: Database, two: Database;

    beforeAll(async () => {
      await node1.query('CREATE DATABASE causal');
      [one, two] = await Promise.all([openDatabase({ type: 'mysql', url: on(node1, 'causal') }), openDatabase({ type: 'mysql', url: on(node2, 'causal') })]);
    }, 60_000);
    afterAll(async () => {
      await one?.close();
      await two?.close();
    });

    test('when a pet is created through node1, then node2 finds it at once, 1,000 times out of 1,000', async () => {
      const [writer, reader] = [new PetRepository(one), new PetRepository(two)];
      let missed = 0;
      for (let i = 0; i < 1000; i++) {
        const pet = await writer.create({ name: `Causal${i}`, categoryId: 1, status: PetStatus.available });
        if (!(await reader.findById(pet.id))) missed++;
      }
      expect(missed).toBe(0);
    }, 120_000);

    test('when node1 has lost the primary component, then its check says so and a read there is 503 with Retry-After', async () => {
      // Run last: the cluster is not whole afterwards.
      await Promise.all(cluster.nodes.slice(1).map((node) => node.kill()));
      // Until the dead peers are evicted, node1 says Synced but its causal reads wait: not ready either way.
      const deadline = Date.now() + 20_000;
      const seen = new Set<string>();
      let states = await one.checkNodes();
      while (states[0].state !== 'non-Primary' && Date.now() < deadline) {
        seen.add(states[0].state);
        await new Promise((resolve) => setTimeout(resolve, 250));
        states = await one.checkNodes();
      }
      expect(states[0]).toEqual({ name: 'primary', role: 'primary', ready: false, state: 'non-Primary' });
      expect([...seen].filter((state) => state !== 'ok' && state !== 'not caught up')).toEqual([]);
      const failure = await withinDeadline(one, (manager) => manager.query('SELECT COUNT(*) FROM pet')).catch((error: unknown) => error);
      const { appError } = toAppError(failure);
      expect([appError.status, appError.headers['Retry-After']]).toEqual([503, '1']);
    }, 60_000);
  });
});
