import { setTimeout as sleep } from 'node:timers/promises';
import { type GaleraCluster, type MariadbNode, type ReplicatedPair, startGaleraCluster, startReplicatedPair } from '../support/mariadb-topology';
import { describeOnMysql } from '../helpers/test-database';

/**
 * The MariaDB topologies the fault tests run on (test/support/mariadb-topology.ts) do what they
 * promise: a Galera cluster replicates, and a node killed or paused comes back with what was
 * written meanwhile; a replica follows its primary, stops and resumes applying, and survives a
 * kill. Start and rejoin times are printed. MySQL runs only (describeOnMysql), like every test
 * that starts servers of its own; the cluster also needs galera-4 and rsync (.ci/run installs them).
 */

/** Runs `work` until it succeeds, for at most `timeoutMs`: a Galera write waits (and times out) while a dead peer is not yet evicted. */
async function eventually<T>(work: () => Promise<T>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(200);
    }
  }
}

/** The names in petstore.pets on `node`, in id order. */
async function namesOn(node: MariadbNode): Promise<string[]> {
  return (await node.query<{ name: string }>('SELECT name FROM petstore.pets ORDER BY id')).map((row) => row.name);
}

/** Adds a pet; INSERT IGNORE because a write that timed out may still have committed, and is then retried. */
async function addPet(node: MariadbNode, id: number, name: string): Promise<void> {
  await node.query('INSERT IGNORE INTO petstore.pets (id, name) VALUES (?, ?)', [id, name]);
}

async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const start = performance.now();
  const result = await work();
  console.log(`${label}: ${Math.round(performance.now() - start)} ms`);
  return result;
}

describeOnMysql('a Galera cluster of three private nodes', () => {
  let cluster: GaleraCluster;
  let node1: MariadbNode, node2: MariadbNode, node3: MariadbNode;

  beforeAll(async () => {
    cluster = await timed('startGaleraCluster()', () => startGaleraCluster());
    [node1, node2, node3] = cluster.nodes;
    await node1.query('CREATE TABLE petstore.pets (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL)');
  }, 90_000);
  afterAll(() => cluster?.stop(), 30_000);

  test('when a row is written on node1, then node3 reads it', async () => {
    await addPet(node1, 1, 'Rex');
    await eventually(async () => expect(await namesOn(node3)).toEqual(['Rex']));
  }, 30_000);

  test('when node2 is killed -9, then node1 still takes writes, and node2 restarted rejoins with them', async () => {
    await node2.kill();
    expect(node2.running).toBe(false);
    await timed('a write on node1 after node2 died', () => eventually(() => addPet(node1, 2, 'Tom')));
    await timed('node2 start() after kill -9, until Synced', () => node2.start());
    expect(node2.running).toBe(true);
    expect(await namesOn(node2)).toEqual(['Rex', 'Tom']);
  }, 60_000);

  test('when node3 is paused, then the others go on without it, and resumed it catches up', async () => {
    node3.pause();
    try {
      await expect(node3.query('SELECT 1')).rejects.toThrow();
      await eventually(() => addPet(node1, 3, 'Kitty'));
    } finally {
      node3.resume();
    }
    await timed('node3 back after resume()', () => eventually(async () => expect(await namesOn(node3)).toEqual(['Rex', 'Tom', 'Kitty']), 30_000));
    await cluster.waitSynced(node3);
  }, 60_000);
});

describeOnMysql('a private primary with one replica', () => {
  let pair: ReplicatedPair;

  beforeAll(async () => {
    pair = await timed('startReplicatedPair()', () => startReplicatedPair());
    await pair.primary.query('CREATE TABLE petstore.pets (id INT PRIMARY KEY, name VARCHAR(50) NOT NULL)');
  }, 60_000);
  afterAll(() => pair?.stop(), 30_000);

  test('when a row is written on the primary, then the replica has it once caught up', async () => {
    await addPet(pair.primary, 1, 'Rex');
    await pair.waitCaughtUp();
    expect(await namesOn(pair.replica)).toEqual(['Rex']);
  }, 30_000);

  test('when its SQL thread is stopped, then the replica applies nothing until it is started again', async () => {
    await pair.stopSqlThread();
    await addPet(pair.primary, 2, 'Tom');
    await expect(pair.waitCaughtUp(1_500)).rejects.toThrow(/has not applied/);
    expect(await namesOn(pair.replica)).toEqual(['Rex']);
    await pair.startSqlThread();
    await pair.waitCaughtUp();
    expect(await namesOn(pair.replica)).toEqual(['Rex', 'Tom']);
  }, 30_000);

  test('when the replica is killed -9 and restarted, then it resumes replicating', async () => {
    await pair.replica.kill();
    await addPet(pair.primary, 3, 'Kitty');
    await timed('replica start() after kill -9', () => pair.replica.start());
    await timed('replica caught up after its restart', () => pair.waitCaughtUp());
    expect(await namesOn(pair.replica)).toEqual(['Rex', 'Tom', 'Kitty']);
  }, 30_000);

  test('when the primary is killed -9 and restarted, then the replica reconnects and follows it', async () => {
    await pair.primary.kill();
    await expect(pair.primary.query('SELECT 1')).rejects.toThrow();
    await timed('primary start() after kill -9', () => pair.primary.start());
    await addPet(pair.primary, 4, 'Nemo');
    await timed('replica caught up after the primary restart', () => pair.waitCaughtUp());
    expect(await namesOn(pair.replica)).toEqual(['Rex', 'Tom', 'Kitty', 'Nemo']);
  }, 30_000);
});
