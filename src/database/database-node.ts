import type { DataSource } from 'typeorm';
import { DATABASE_DEADLINES } from '../limits';

/** What `/readyz` and the metrics say of one database server (docs/operations.md "Scale-out notes"). */
export interface NodeState {
  /** `primary`, or `replica1`, `replica2`… in the order of DATABASE_REPLICA_URLS. */
  readonly name: string;
  readonly role: 'primary' | 'replica';
  /** The primary: it can serve this instance. A replica: it is in the read rotation. */
  readonly ready: boolean;
  /**
   * `ok`; `unreachable`; a Galera node's own state when not Synced in the primary component
   * (`Joined`, `Donor/Desynced`, `non-Primary`…) or `not caught up` (it says Synced, a causal
   * read fails); `lagging`; `replication stopped`; `not checked yet`.
   */
  readonly state: string;
  /** A replica's lag behind its source, in seconds, as it reports it; null when it cannot tell (a thread stopped). */
  readonly lagSeconds?: number | null;
}

/**
 * One database server the service uses: the primary (DATABASE_URL), or a read replica. Holds
 * its DataSource, whether it is a Galera node, and its latest checked state; the checks
 * themselves are in database-health.ts.
 */
export class DatabaseNode {
  /** Set once the server says `wsrep_on = ON`: its sessions then read causally (wsrep_sync_wait). */
  galera = false;
  state: NodeState;
  /** A replica that was unreachable being connected in the background (database-health.ts). */
  connecting?: Promise<void>;

  /**
   * @param name - `primary` or `replicaN`.
   * @param dataSource - the node's own DataSource (initialised, or not yet for a replica that was down at start).
   */
  constructor(
    readonly name: string,
    readonly role: 'primary' | 'replica',
    readonly dataSource: DataSource,
  ) {
    this.state = { name, role, ready: role === 'primary', state: 'not checked yet' };
  }
}

/** The servers behind a primary DataSource: itself and its read replicas. */
export interface DatabaseNodes {
  readonly primary: DatabaseNode;
  readonly replicas: readonly DatabaseNode[];
  /** A replica further behind its source (s) leaves the read rotation. */
  readonly maxLagSeconds: number;
}

const nodesByPrimary = new WeakMap<DataSource, DatabaseNodes & { nextReplica: number }>();
const nodeByDataSource = new WeakMap<DataSource, DatabaseNode>();

/**
 * Records the servers behind `primary` (openDatabase does, once), so that every database call
 * made with the primary DataSource can find its replicas and each node's kind.
 */
export function registerNodes(nodes: DatabaseNodes): void {
  nodesByPrimary.set(nodes.primary.dataSource, { ...nodes, nextReplica: 0 });
  for (const node of [nodes.primary, ...nodes.replicas]) nodeByDataSource.set(node.dataSource, node);
}

/** The node a DataSource connects to, when openDatabase opened it. */
export function nodeOf(dataSource: DataSource): DatabaseNode | undefined {
  return nodeByDataSource.get(dataSource);
}

/** The primary and replicas behind a primary DataSource; just the primary when none were registered. */
export function nodesOf(primary: DataSource): DatabaseNodes {
  return (
    nodesByPrimary.get(primary) ?? {
      primary: nodeOf(primary) ?? new DatabaseNode('primary', 'primary', primary),
      replicas: [],
      maxLagSeconds: DATABASE_DEADLINES.replicaMaxLagSeconds,
    }
  );
}

/**
 * Where a read outside a transaction goes: the next replica in the rotation (round robin over
 * those whose latest check found them reachable, synced and within the lag bound), or the
 * primary when none is.
 *
 * @param primary - the primary DataSource, as every caller holds it.
 * @returns the DataSource to read from.
 */
export function readerOf(primary: DataSource): DataSource {
  const nodes = nodesByPrimary.get(primary);
  if (!nodes || nodes.replicas.length === 0) return primary;
  for (let tried = 0; tried < nodes.replicas.length; tried++) {
    const replica = nodes.replicas[nodes.nextReplica++ % nodes.replicas.length];
    if (replica.state.ready) return replica.dataSource;
  }
  return primary;
}

/** Takes the node of `dataSource` out of the read rotation now (a read on it lost its connection); its next check decides again. */
export function markUnreachable(dataSource: DataSource): void {
  const node = nodeOf(dataSource);
  if (node) node.state = { ...node.state, ready: false, state: 'unreachable' };
}
