import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { type Connection, createConnection } from 'mysql2/promise';
import { createDatabase } from './mysql-admin';
import { freePort } from './free-port';

/**
 * MariaDB topologies of our own, for the fault tests and the bench's Galera phase, started on 127.0.0.1 (no Docker): a Galera
 * cluster, or a primary with one asynchronous replica. Every node is a private
 * `mariadbd --no-defaults` with its own data directory under the system temp directory, its own
 * ports and socket; never the shared server on 3306. Nodes run as the `mysql` user (mariadbd
 * switches to it): as root, Galera's rsync state transfer runs its daemon as `nobody`, which
 * cannot write the joiner's data directory.
 */

const GALERA_LIBRARY = '/usr/lib/galera/libgalera_smm.so';
/** Every admin connection and query gives up after this long, so a paused node never hangs a test. */
const ADMIN_TIMEOUT_MS = 3_000;
/** How much of a node's standard error is kept, for the errors thrown about it. */
const LOG_TAIL_CHARS = 4_000;

/** One MariaDB server of a topology. */
export interface MariadbNode {
  /** 'node1'…'node3' in a Galera cluster, 'primary' or 'replica' in a pair. */
  readonly name: string;
  /** Its SQL port on 127.0.0.1. */
  readonly port: number;
  /** `mysql://root@127.0.0.1:<port>/petstore` (no password); the database exists on every node. */
  readonly url: string;
  /**
   * Runs one statement on a fresh connection (no database selected), closed afterwards.
   *
   * @returns the rows (for a statement without rows, mysql2's result header as the one element).
   * @throws mysql2's error, or a timeout error after about 3 s to connect or 3 s to answer.
   */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** SIGCONT then SIGKILL (kill -9), and waits for the exit; the data directory stays. */
  kill(): Promise<void>;
  /**
   * Starts the node again after `kill()`, on the same ports and data: a Galera node rejoins the
   * cluster (IST or SST) and this resolves once it is Synced; a replica resumes replicating; a
   * primary serves again (its replica reconnects by itself).
   *
   * @throws Error with the end of the node's standard error when it is not ready within 60 s.
   */
  start(): Promise<void>;
  /** SIGSTOP: the node keeps its sockets open and answers nothing. */
  pause(): void;
  /** SIGCONT: the node goes on where it stopped. */
  resume(): void;
  /** Whether its process is alive (a paused node is running). */
  readonly running: boolean;
}

/** A Galera cluster of private nodes. */
export interface GaleraCluster {
  /** node1 (which bootstrapped the cluster), node2, node3. */
  readonly nodes: readonly MariadbNode[];
  /**
   * Waits until `node` is Synced, ready and in the Primary component. Right after `resume()` a
   * node may still report the state it had before the pause, until it notices it was evicted:
   * wait for the data it should have, not only for this.
   *
   * @param timeoutMs - default 60 000.
   * @throws Error naming the last state seen, with the end of the node's standard error.
   */
  waitSynced(node: MariadbNode, timeoutMs?: number): Promise<void>;
  /** Kills every node and deletes their data; may be called again. */
  stop(): Promise<void>;
}

/** A primary and one asynchronous replica (binlog, GTID). */
export interface ReplicatedPair {
  readonly primary: MariadbNode;
  readonly replica: MariadbNode;
  /** STOP SLAVE SQL_THREAD on the replica: it keeps fetching the primary's events but applies none. */
  stopSqlThread(): Promise<void>;
  /** START SLAVE SQL_THREAD on the replica. */
  startSqlThread(): Promise<void>;
  /**
   * Waits until the replica has applied every transaction the primary has logged (MASTER_GTID_WAIT
   * on the primary's gtid_binlog_pos).
   *
   * @param timeoutMs - default 30 000.
   * @throws Error with the replica's SHOW SLAVE STATUS when it has not caught up in time.
   */
  waitCaughtUp(timeoutMs?: number): Promise<void>;
  /** Kills both servers and deletes their data; may be called again. */
  stop(): Promise<void>;
}

/** Whether this machine can run a Galera cluster: the galera-4 library, rsync and MariaDB's rsync SST script. */
function galeraAvailable(): boolean {
  return existsSync(GALERA_LIBRARY) && onPath('rsync') && onPath('wsrep_sst_rsync');
}

/** Whether an executable `name` is on PATH. */
function onPath(name: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

// Every node runs in a process group of its own (its state-transfer scripts and rsync daemons
// with it); they are all killed when the test process exits, whatever the test forgot.
const liveGroups = new Set<number>();
process.once('exit', () => {
  for (const pid of liveGroups) killGroup(pid, 'SIGKILL');
});

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** Polls `check` every 200 ms until it resolves; throws `describe(lastError)` after `timeoutMs`. */
async function waitUntil(check: () => Promise<void>, timeoutMs: number, describe: (error: Error) => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(describe(error as Error), { cause: error });
      await sleep(200);
    }
  }
}

/** A directory under the system temp directory, with empty data/ and tmp/, that the `mysql` user owns (mkdtemp's is root's, mode 700). */
async function makeNodeDirectory(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  await mkdir(path.join(dir, 'data'));
  await mkdir(path.join(dir, 'tmp'));
  await promisify(execFile)('chown', ['-R', 'mysql:mysql', dir]);
  return dir;
}

/** Installs the system tables into `<dir>/data`, as the `mysql` user, with a small redo log (a state transfer copies it). */
async function installDatadir(dir: string): Promise<void> {
  await promisify(execFile)('mariadb-install-db', [
    '--no-defaults',
    '--user=mysql',
    `--datadir=${path.join(dir, 'data')}`,
    '--skip-test-db',
    '--innodb-log-file-size=16M',
    '--innodb-buffer-pool-size=32M',
  ]);
}

/** The options every node has: its own files, its port on 127.0.0.1, no passwords, little memory. */
function commonArgs(dir: string, port: number): string[] {
  return [
    '--no-defaults',
    '--user=mysql',
    `--datadir=${path.join(dir, 'data')}`,
    `--tmpdir=${path.join(dir, 'tmp')}`,
    `--socket=${path.join(dir, 'mariadb.sock')}`,
    `--pid-file=${path.join(dir, 'mariadb.pid')}`,
    `--port=${port}`,
    '--bind-address=127.0.0.1',
    '--skip-grant-tables',
    '--innodb-buffer-pool-size=32M',
    '--innodb-log-file-size=16M',
    '--performance-schema=OFF',
    '--skip-name-resolve',
  ];
}

/** One node's process across kills and restarts. */
class Node implements MariadbNode {
  readonly url: string;
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private log = '';

  constructor(
    readonly name: string,
    readonly port: number,
    /** The node's directory: data/, tmp/, its socket. */
    readonly dir: string,
    /** The mariadbd arguments of its next start (Galera: with or without --wsrep-new-cluster). */
    private readonly args: (restart: boolean) => string[],
    /** Resolves once the node serves as it should (Synced; replicating). */
    private readonly ready: (restart: boolean) => Promise<void>,
  ) {
    this.url = `mysql://root@127.0.0.1:${port}/petstore`;
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The end of the node's standard error (its error log), for error messages. */
  get logTail(): string {
    return `--- ${this.name} (port ${this.port}) stderr, last ${LOG_TAIL_CHARS} chars ---\n${this.log}`;
  }

  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    let connection: Connection | undefined;
    try {
      connection = await createConnection({ host: '127.0.0.1', port: this.port, user: 'root', connectTimeout: ADMIN_TIMEOUT_MS });
      const [rows] = await connection.query({ sql, values: params, timeout: ADMIN_TIMEOUT_MS });
      return (Array.isArray(rows) ? rows : [rows]) as T[];
    } finally {
      // destroy(), not end(): end() waits for an answer a paused server never sends.
      connection?.destroy();
    }
  }

  /** Spawns mariadbd; `restart` is false on the topology's first start only. */
  launch(restart: boolean): void {
    if (this.running) throw new Error(`${this.name} is already running`);
    const child = spawn('mariadbd', this.args(restart), { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    this.child = child;
    this.log += `--- ${restart ? 'restart' : 'start'} ---\n`;
    child.stderr?.on('data', (chunk) => (this.log = (this.log + chunk).slice(-LOG_TAIL_CHARS)));
    const pid = child.pid;
    if (pid !== undefined) liveGroups.add(pid);
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        if (pid !== undefined) liveGroups.delete(pid);
        resolve();
      }),
    );
    child.once('error', (error) => (this.log += `spawn failed: ${error.message}\n`));
  }

  /** Launches the node and waits until `ready`; on a timeout or an early exit, kills it and throws with its log. */
  async launchAndWait(restart: boolean, timeoutMs = 60_000): Promise<void> {
    this.launch(restart);
    await waitUntil(
      async () => {
        if (!this.running) throw new Error(`mariadbd exited (code ${this.child?.exitCode}, signal ${this.child?.signalCode})`);
        await this.ready(restart);
      },
      timeoutMs,
      (error) => `${this.name} did not become ready within ${timeoutMs} ms: ${error.message}\n${this.logTail}`,
    ).catch(async (error: Error) => {
      await this.kill();
      throw error;
    });
  }

  async kill(): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    if (this.running) {
      killGroup(pid, 'SIGCONT');
      killGroup(pid, 'SIGKILL');
    }
    await this.exited;
    // The group may outlive its leader (an SST script mid-copy): make sure nothing of it is left.
    killGroup(pid, 'SIGKILL');
  }

  start(): Promise<void> {
    return this.launchAndWait(true);
  }

  pause(): void {
    if (this.child?.pid !== undefined) killGroup(this.child.pid, 'SIGSTOP');
  }

  resume(): void {
    if (this.child?.pid !== undefined) killGroup(this.child.pid, 'SIGCONT');
  }
}

/** Kills `nodes` and deletes `dirs`, once; later calls return the first call's promise. */
function stopOnce(nodes: readonly Node[], dirs: readonly string[]): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () =>
    (stopping ??= (async () => {
      await Promise.all(nodes.map((node) => node.kill()));
      await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true, maxRetries: 5 })));
    })());
}

/** The wsrep status variables of `node` that say whether it serves. */
async function galeraState(node: MariadbNode): Promise<Record<string, string>> {
  const rows = await node.query<{ Variable_name: string; Value: string }>(
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', 'wsrep_ready', 'wsrep_cluster_status', 'wsrep_cluster_size')",
  );
  return Object.fromEntries(rows.map((row) => [row.Variable_name, row.Value]));
}

/** Resolves when `node` is Synced, ready and Primary; throws with the state seen otherwise. */
async function checkSynced(node: MariadbNode): Promise<void> {
  const state = await galeraState(node);
  if (state.wsrep_local_state_comment !== 'Synced' || state.wsrep_ready !== 'ON' || state.wsrep_cluster_status !== 'Primary') {
    throw new Error(`not synced: ${JSON.stringify(state)}`);
  }
}

/**
 * Starts a Galera cluster (galera-4, rsync state transfer) on 127.0.0.1: node1 bootstraps it
 * (with a `petstore` database), then the others join it together by state transfer from it.
 * Each node uses four free ports: SQL, group communication, IST and SST.
 *
 * @param options.size - the number of nodes (default 3).
 * @returns the cluster, every node Synced; the caller must `stop()` it.
 * @throws Error naming what to install when galera-4 or rsync is missing; Error with the
 *   failing node's standard error when a node is not Synced within 60 s
 *   (everything started is stopped first).
 */
export async function startGaleraCluster({ size = 3 }: { size?: number } = {}): Promise<GaleraCluster> {
  if (!galeraAvailable()) {
    throw new Error('The Galera tests need galera-4 and rsync: install them (Debian: apt-get install galera-4 rsync; .ci/run does).');
  }
  const ports = [];
  for (let i = 0; i < size; i++) ports.push({ sql: await freePort(), group: await freePort(), ist: await freePort(), sst: await freePort() });
  const clusterAddress = `gcomm://${ports.map((p) => `127.0.0.1:${p.group}`).join(',')}`;
  const dirs = await Promise.all(ports.map((_, i) => makeNodeDirectory(`petstore-galera-node${i + 1}-`)));
  const nodes: Node[] = ports.map(
    (p, i) =>
      new Node(
        `node${i + 1}`,
        p.sql,
        dirs[i],
        (restart) => [
          ...commonArgs(dirs[i], p.sql),
          '--wsrep-on=ON',
          `--wsrep-provider=${GALERA_LIBRARY}`,
          '--wsrep-cluster-name=petstore-test',
          `--wsrep-node-name=node${i + 1}`,
          `--wsrep-cluster-address=${clusterAddress}`,
          `--wsrep-node-address=127.0.0.1:${p.group}`,
          `--wsrep-provider-options=${[
            `base_port=${p.group}`,
            `gmcast.listen_addr=tcp://127.0.0.1:${p.group}`,
            `ist.recv_addr=127.0.0.1:${p.ist}`,
            'gcache.size=32M',
            // A killed or paused peer is suspected after 2 s and evicted after 4 s (defaults 5 s
            // and 15 s), so the survivors' writes, which wait for it meanwhile, resume sooner.
            'evs.keepalive_period=PT0.5S',
            'evs.inactive_check_period=PT0.5S',
            'evs.suspect_timeout=PT2S',
            'evs.inactive_timeout=PT4S',
            'evs.install_timeout=PT4S',
          ].join(';')}`,
          `--wsrep-sst-receive-address=127.0.0.1:${p.sst}`,
          '--wsrep-sst-method=rsync',
          '--binlog-format=ROW',
          '--innodb-autoinc-lock-mode=2',
          '--default-storage-engine=InnoDB',
          // Only the first start of node1 makes a new cluster; any restart joins the running one.
          ...(i === 0 && !restart ? ['--wsrep-new-cluster'] : []),
        ],
        (): Promise<void> => checkSynced(nodes[i]),
      ),
  );
  const stop = stopOnce(nodes, dirs);
  try {
    await installDatadir(dirs[0]);
    // The joiners' data directories stay empty: the state transfer fills them.
    await nodes[0].launchAndWait(false);
    await createDatabase(nodes[0].url);
    await Promise.all(nodes.slice(1).map((node) => node.launchAndWait(false)));
  } catch (error) {
    await stop().catch(() => undefined); // the start's error is the one to report
    throw error;
  }
  return {
    nodes,
    waitSynced: async (node, timeoutMs = 60_000) => {
      const tail = nodes.find((n) => n === node)?.logTail ?? '';
      await waitUntil(
        () => checkSynced(node),
        timeoutMs,
        (error) => `${node.name} not Synced within ${timeoutMs} ms: ${error.message}\n${tail}`,
      );
    },
    stop,
  };
}

/**
 * Starts a MariaDB primary (binlog, server-id 1) with one replica (server-id 2) replicating it
 * by GTID (MASTER_USE_GTID=slave_pos), both on 127.0.0.1, and creates the `petstore` database
 * on the primary, replicated. The replica retries a lost primary every second
 * (MASTER_CONNECT_RETRY=1, --slave-net-timeout=2); the primary syncs its binlog on every commit,
 * so a kill -9 loses nothing the replica may already have.
 *
 * @returns the pair, the replica caught up; the caller must `stop()` it.
 * @throws Error with the failing server's standard error when one does not start within 60 s
 *   (everything started is stopped first).
 */
export async function startReplicatedPair(): Promise<ReplicatedPair> {
  const [primaryPort, replicaPort] = [await freePort(), await freePort()];
  const dirs = await Promise.all([makeNodeDirectory('petstore-primary-'), makeNodeDirectory('petstore-replica-')]);
  const replicate = async () => {
    await replica.query(
      `CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=${primaryPort}, MASTER_USER='root', MASTER_PASSWORD='', MASTER_CONNECT_RETRY=1, MASTER_USE_GTID=slave_pos`,
    );
  };
  const primary = new Node(
    'primary',
    primaryPort,
    dirs[0],
    () => [
      ...commonArgs(dirs[0], primaryPort),
      '--server-id=1',
      `--log-bin=${path.join(dirs[0], 'data', 'primary-bin')}`,
      '--binlog-format=ROW',
      '--sync-binlog=1',
    ],
    async () => void (await primary.query('SELECT 1')),
  );
  const replica = new Node(
    'replica',
    replicaPort,
    dirs[1],
    () => [
      ...commonArgs(dirs[1], replicaPort),
      '--server-id=2',
      `--relay-log=${path.join(dirs[1], 'data', 'replica-relay')}`,
      '--relay-log-recovery',
      '--slave-net-timeout=2',
      '--skip-slave-start',
    ],
    async (restart) => {
      // Started by hand, first and again: a CHANGE MASTER on first start, then the replication threads.
      if (!restart) await replicate();
      await replica.query('START SLAVE');
    },
  );
  const stop = stopOnce([primary, replica], dirs);
  const pair: ReplicatedPair = {
    primary,
    replica,
    stopSqlThread: async () => void (await replica.query('STOP SLAVE SQL_THREAD')),
    startSqlThread: async () => void (await replica.query('START SLAVE SQL_THREAD')),
    waitCaughtUp: async (timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const [{ pos }] = await primary.query<{ pos: string }>('SELECT @@gtid_binlog_pos AS pos');
        // Waits at most 1 s per query, under the admin query timeout.
        const [{ done }] = await replica.query<{ done: number }>('SELECT MASTER_GTID_WAIT(?, 1) AS done', [pos]);
        if (Number(done) === 0) return;
        if (Date.now() > deadline) {
          const [status] = await replica.query('SHOW SLAVE STATUS').catch((error: Error) => [error.message]);
          throw new Error(`the replica has not applied the primary's ${pos} within ${timeoutMs} ms: ${JSON.stringify(status)}\n${replica.logTail}`);
        }
      }
    },
    stop,
  };
  try {
    // One installation, copied: two mariadb-install-db at once failed once, and a copy is quicker.
    await installDatadir(dirs[0]);
    await promisify(execFile)('cp', ['-a', `${path.join(dirs[0], 'data')}/.`, path.join(dirs[1], 'data')]);
    await Promise.all([primary.launchAndWait(false), replica.launchAndWait(false)]);
    await createDatabase(primary.url);
    await pair.waitCaughtUp();
  } catch (error) {
    await stop().catch(() => undefined); // the start's error is the one to report
    throw error;
  }
  return pair;
}
