import type { DataSource, EntityManager } from 'typeorm';
import { withinDeadline } from './database-deadline';
import { type DatabaseNode, type NodeState, nodesOf } from './database-node';
import { DATABASE_DEADLINES } from '../limits';

/** Galera's `wsrep_local_state` of a node that has everything and serves: Synced. */
const WSREP_SYNCED = '4';

/** A Galera node that says Synced, but cannot complete a causal read. */
const NOT_CAUGHT_UP = 'not caught up';

type StatusRow = { Variable_name: string; Value: string };
type ReplicaStatusRow = Record<string, string | number | null>;

/** Whether the server is a Galera node (`wsrep_on = ON`); MySQL without Galera has no such variable. */
export async function isGaleraNode(manager: EntityManager): Promise<boolean> {
  const rows: StatusRow[] = await manager.query(`SHOW VARIABLES LIKE 'wsrep_on'`);
  return rows[0]?.Value === 'ON';
}

/**
 * A Galera node's own view (SHOW commands: they answer on a node outside the primary component,
 * where SELECTs are refused): ready when Synced, in the primary component, and a causal read
 * goes through. `answered` is set once the node has given its status, so that a causal read
 * that outlasts the check's deadline reads as `not caught up`, not `unreachable`.
 */
async function galeraState(manager: EntityManager, progress: { answered: boolean }): Promise<{ ready: boolean; state: string }> {
  const rows: StatusRow[] = await manager.query(
    `SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state', 'wsrep_local_state_comment')`,
  );
  progress.answered = true;
  const status = Object.fromEntries(rows.map((row) => [row.Variable_name.toLowerCase(), row.Value]));
  if (status.wsrep_cluster_status !== 'Primary') return { ready: false, state: 'non-Primary' };
  if (status.wsrep_ready !== 'ON' || status.wsrep_local_state !== WSREP_SYNCED) {
    return { ready: false, state: status.wsrep_local_state_comment || 'not ready' };
  }
  // Just resumed from a pause, or with peers gone but not yet evicted, a node may report Synced
  // while a causal read (the session's wsrep_sync_wait) fails or waits: it cannot serve yet.
  try {
    await manager.query('SELECT 1');
  } catch {
    return { ready: false, state: NOT_CAUGHT_UP };
  }
  return { ready: true, state: 'ok' };
}

/**
 * An asynchronous replica's lag, as it reports it (`SHOW REPLICA STATUS`; `SHOW SLAVE STATUS`
 * on servers older than MariaDB 10.5 and MySQL 8.0.22): undefined when the server replicates
 * from nothing (a Galera node, a reader endpoint whose storage is shared), null when its SQL
 * thread is stopped or it cannot tell (Seconds_Behind_Master is NULL).
 */
async function replicaLag(manager: EntityManager): Promise<number | null | undefined> {
  let rows: ReplicaStatusRow[];
  try {
    rows = await manager.query('SHOW REPLICA STATUS');
  } catch {
    rows = await manager.query('SHOW SLAVE STATUS');
  }
  const [status] = rows;
  if (!status) return undefined;
  const sqlRunning = status.Slave_SQL_Running ?? status.Replica_SQL_Running;
  const lag = status.Seconds_Behind_Master ?? status.Seconds_Behind_Source;
  return sqlRunning === 'Yes' && lag !== null && lag !== undefined ? Number(lag) : null;
}

/**
 * Connects a replica that could not be reached at start (in the background: a check never
 * waits for a connection timeout), and finds out whether it is a Galera node.
 */
function connectInBackground(node: DatabaseNode): void {
  node.connecting ??= node.dataSource
    .initialize()
    .then(async (dataSource) => {
      node.galera = await isGaleraNode(dataSource.manager);
    })
    .catch(() => undefined)
    .finally(() => (node.connecting = undefined));
}

/** Checks one node now, within DATABASE_DEADLINES.readinessMs; records and returns its state. */
async function checkNode(node: DatabaseNode, maxLagSeconds: number): Promise<NodeState> {
  const { name, role } = node;
  let state: NodeState;
  const progress = { answered: false };
  if (!node.dataSource.isInitialized) {
    connectInBackground(node);
    state = { name, role, ready: false, state: 'unreachable' };
  } else {
    try {
      state = await withinDeadline(
        node.dataSource,
        async (manager) => {
          if (node.galera) return { name, role, ...(await galeraState(manager, progress)) };
          if (role === 'primary') {
            await manager.query('SELECT 1');
            return { name, role, ready: true, state: 'ok' };
          }
          const lagSeconds = await replicaLag(manager);
          if (lagSeconds === undefined) return { name, role, ready: true, state: 'ok' };
          if (lagSeconds === null) return { name, role, ready: false, state: 'replication stopped', lagSeconds };
          return { name, role, ready: lagSeconds <= maxLagSeconds, state: lagSeconds <= maxLagSeconds ? 'ok' : 'lagging', lagSeconds };
        },
        { timeoutMs: DATABASE_DEADLINES.readinessMs },
      );
    } catch {
      state = { name, role, ready: false, state: progress.answered ? NOT_CAUGHT_UP : 'unreachable' };
    }
  }
  node.state = state;
  return state;
}

const lastChecks = new WeakMap<object, { at: number; states: Promise<readonly NodeState[]> }>();

/**
 * Checks the primary and every replica behind a primary DataSource (docs/operations.md "Scale-out notes"),
 * at most once per {@link DATABASE_DEADLINES.nodeCheckIntervalMs}: callers within that time share the result.
 * A replica is in the read rotation while reachable, Synced (a Galera node) and no more than
 * DATABASE_REPLICA_MAX_LAG_SECONDS behind its source (a stopped SQL thread counts as unbounded); the primary is
 * ready while reachable and, on Galera, Synced in the primary component.
 *
 * @param primary - the primary DataSource from openDatabase.
 * @returns each node's state, the primary first.
 */
export function checkNodes(primary: DataSource): Promise<readonly NodeState[]> {
  const nodes = nodesOf(primary);
  const last = lastChecks.get(nodes.primary);
  if (last && Date.now() - last.at < DATABASE_DEADLINES.nodeCheckIntervalMs) return last.states;
  const states = Promise.all([nodes.primary, ...nodes.replicas].map((node) => checkNode(node, nodes.maxLagSeconds)));
  lastChecks.set(nodes.primary, { at: Date.now(), states });
  return states;
}

/**
 * Checks the nodes every {@link DATABASE_DEADLINES.nodeCheckIntervalMs} while there are replicas, so that a
 * replica that lags, stops replicating or goes away leaves the read rotation (and comes back)
 * without waiting for traffic. The timer never keeps the process alive.
 *
 * @returns a function that stops the checks.
 */
export function watchReplicas(primary: DataSource): () => void {
  if (nodesOf(primary).replicas.length === 0) return () => undefined;
  const timer = setInterval(() => void checkNodes(primary), DATABASE_DEADLINES.nodeCheckIntervalMs);
  timer.unref();
  void checkNodes(primary);
  return () => clearInterval(timer);
}
