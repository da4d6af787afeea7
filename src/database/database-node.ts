import type { DataSource } from 'typeorm';
import { DATABASE_DEADLINES } from '../limits';

/** What `/readyz` and the metrics say of one database server (docs/operations.md "Scale-out notes"). */
export interface NodeState {
  /** `primary`, or `replica1`, `replica2`… in the order of DATABASE_REPLICA_URLS. */
  readonly name: string;
  readonly role: 'primary' | 'replica';
  /** A replica: in the read rotation. */
  readonly ready: boolean;
  /** `ok`, `unreachable`, a Galera state (`Joined`, `non-Primary`, `not caught up`…), `lagging`, `replication stopped`, `not checked yet`. */
  readonly state: string;
  /** Seconds; null when the replica cannot tell. */
  readonly lagSeconds?: number | null;
}

/** One database server, the primary or a read replica, with its latest checked state (database-health.ts). */
export class DatabaseNode {
  /** Its sessions then read causally (wsrep_sync_wait). */
  galera = false;
  state: NodeState;
  /** A replica unreachable at start, being connected in the background. */
  connecting?: Promise<void>;

  constructor(
    readonly name: string,
    readonly role: 'primary' | 'replica',
    readonly dataSource: DataSource,
  ) {
    this.state = { name, role, ready: role === 'primary', state: 'not checked yet' };
  }
}

export interface DatabaseNodes {
  readonly primary: DatabaseNode;
  readonly replicas: readonly DatabaseNode[];
  /** A replica further behind leaves the read rotation. */
  readonly maxLagSeconds: number;
}

const nodesByPrimary = new WeakMap<DataSource, DatabaseNodes & { nextReplica: number }>();
const nodeByDataSource = new WeakMap<DataSource, DatabaseNode>();

/** So that every call made with the primary DataSource can find its replicas (openDatabase calls it once). */
export function registerNodes(nodes: DatabaseNodes): void {
  nodesByPrimary.set(nodes.primary.dataSource, { ...nodes, nextReplica: 0 });
  for (const node of [nodes.primary, ...nodes.replicas]) nodeByDataSource.set(node.dataSource, node);
}

export function nodeOf(dataSource: DataSource): DatabaseNode | undefined {
  return nodeByDataSource.get(dataSource);
}

export function nodesOf(primary: DataSource): DatabaseNodes {
  return (
    nodesByPrimary.get(primary) ?? {
      primary: nodeOf(primary) ?? new DatabaseNode('primary', 'primary', primary),
      replicas: [],
      maxLagSeconds: DATABASE_DEADLINES.replicaMaxLagSeconds,
    }
  );
}

/** Where a read outside a transaction goes: round robin over the ready replicas, else the primary. */
export function readerOf(primary: DataSource): DataSource {
  const nodes = nodesByPrimary.get(primary);
  if (!nodes || nodes.replicas.length === 0) return primary;
  for (let tried = 0; tried < nodes.replicas.length; tried++) {
    const replica = nodes.replicas[nodes.nextReplica++ % nodes.replicas.length];
    if (replica.state.ready) return replica.dataSource;
  }
  return primary;
}

/** Out of the read rotation until its next check. */
export function markUnreachable(dataSource: DataSource): void {
  const node = nodeOf(dataSource);
  if (node) node.state = { ...node.state, ready: false, state: 'unreachable' };
}
