import type { EntityManager } from 'typeorm';
import type { DatabaseNode, NodeState } from './database-node';
import { DATABASE_DEADLINES } from '../limits';

/** Galera's `wsrep_local_state` Synced. */
const WSREP_SYNCED = '4';

const NOT_CAUGHT_UP = 'not caught up';

type StatusRow = { Variable_name: string; Value: string };
type ReplicaStatusRow = Record<string, string | number | null>;

/** `wsrep_on = ON`; MySQL without Galera has no such variable. */
export async function isGaleraNode(manager: EntityManager): Promise<boolean> {
  const rows: StatusRow[] = await manager.query(`SHOW VARIABLES LIKE 'wsrep_on'`);
  return rows[0]?.Value === 'ON';
}

/**
 * SHOW, as it answers outside the primary component, where SELECT is refused. `answered` tells a causal read that
 * outlasted the deadline (`not caught up`) from a node that never answered (`unreachable`).
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
  // Just resumed, or with peers gone but not yet evicted, a node reports Synced while causal reads fail or wait.
  try {
    await manager.query('SELECT 1');
  } catch {
    return { ready: false, state: NOT_CAUGHT_UP };
  }
  return { ready: true, state: 'ok' };
}

/**
 * Seconds behind its source; undefined when it replicates from nothing (Galera, shared storage), null when its SQL thread
 * is stopped or it cannot tell. `SHOW SLAVE STATUS` for servers before MariaDB 10.5 and MySQL 8.0.22.
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

/** In the background, so a check never waits for a connection timeout. */
function connectInBackground(node: DatabaseNode): void {
  node.connecting ??= node.dataSource
    .initialize()
    .then(async (dataSource) => {
      node.galera = await isGaleraNode(dataSource.manager);
    })
    .catch(() => undefined)
    .finally(() => (node.connecting = undefined));
}

/** Checks one node now, a replica against `maxLagSeconds`; records and returns its state. */
export async function checkNode(node: DatabaseNode, maxLagSeconds: number): Promise<NodeState> {
  const { name, role } = node;
  let state: NodeState;
  const progress = { answered: false };
  if (!node.dataSource.isInitialized) {
    connectInBackground(node);
    state = { name, role, ready: false, state: 'unreachable' };
  } else {
    try {
      state = await node.call(async (manager) => {
        if (node.galera) return { name, role, ...(await galeraState(manager, progress)) };
        if (role === 'primary') {
          await manager.query('SELECT 1');
          return { name, role, ready: true, state: 'ok' };
        }
        const lagSeconds = await replicaLag(manager);
        if (lagSeconds === undefined) return { name, role, ready: true, state: 'ok' };
        if (lagSeconds === null) return { name, role, ready: false, state: 'replication stopped', lagSeconds };
        return { name, role, ready: lagSeconds <= maxLagSeconds, state: lagSeconds <= maxLagSeconds ? 'ok' : 'lagging', lagSeconds };
      }, DATABASE_DEADLINES.readinessMs);
    } catch {
      state = { name, role, ready: false, state: progress.answered ? NOT_CAUGHT_UP : 'unreachable' };
    }
  }
  node.state = state;
  return state;
}
