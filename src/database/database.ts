import type { DataSource } from 'typeorm';
import { checkNode } from './database-health';
import type { DatabaseNode, NodeState } from './database-node';
import { type SqlDialect, sqlDialectOf } from './sql-dialect';
import { DATABASE_DEADLINES } from '../limits';

/**
 * The database servers of one process (docs/operations.md "Scale-out notes"): the primary, which takes every write, and
 * the read replicas, with their checks. Made by `openDatabase`; `close()` closes them all.
 */
export class Database {
  /** The replica the next read tries first. */
  private nextReplica = 0;
  /** The periodic check while there are replicas ({@link watchReplicas}). */
  private watchTimer: NodeJS.Timeout | undefined;
  /** The latest check, shared by callers within DATABASE_DEADLINES.nodeCheckIntervalMs. */
  private lastCheck: { at: number; states: Promise<readonly NodeState[]> } | undefined;
  /** The SQL of its engine that TypeORM does not write (sql-dialect.ts), chosen once, from the primary's driver. */
  readonly dialect: SqlDialect;

  /**
   * @param maxLagSeconds - a replica further behind leaves the read rotation.
   * @throws Error when the primary's driver is neither MySQL nor sql.js (sqlDialectOf).
   */
  constructor(
    readonly primary: DatabaseNode,
    readonly replicas: readonly DatabaseNode[] = [],
    private readonly maxLagSeconds: number = DATABASE_DEADLINES.replicaMaxLagSeconds,
  ) {
    this.dialect = sqlDialectOf(primary.dataSource);
  }

  /** Whether the data is this process's alone (the embedded database: SqlDialect.embedded); false on a server other instances share. */
  get embedded(): boolean {
    return this.dialect.embedded;
  }

  /** The primary's DataSource: writes, transactions, migrations, and reads that must see them. */
  get writer(): DataSource {
    return this.primary.dataSource;
  }

  /** The primary, then the replicas in the order of DATABASE_REPLICA_URLS. */
  get nodes(): readonly DatabaseNode[] {
    return [this.primary, ...this.replicas];
  }

  /** Where a read outside a transaction goes: round robin over the ready replicas, else the primary. */
  reader(): DatabaseNode {
    for (let tried = 0; tried < this.replicas.length; tried++) {
      const replica = this.replicas[this.nextReplica++ % this.replicas.length];
      if (replica.state.ready) return replica;
    }
    return this.primary;
  }

  /** Takes `node` out of the read rotation until its next check (its connection was lost). */
  markUnreachable(node: DatabaseNode): void {
    node.state = { ...node.state, ready: false, state: 'unreachable' };
  }

  /**
   * Each node's state, the primary first; at most one check per {@link DATABASE_DEADLINES.nodeCheckIntervalMs}, callers
   * within it sharing the result. Never rejects: a node that fails its check is reported unreachable.
   */
  checkNodes(): Promise<readonly NodeState[]> {
    if (this.lastCheck && Date.now() - this.lastCheck.at < DATABASE_DEADLINES.nodeCheckIntervalMs) return this.lastCheck.states;
    const states = Promise.all(this.nodes.map((node) => checkNode(node, this.maxLagSeconds)));
    this.lastCheck = { at: Date.now(), states };
    return states;
  }

  /** Checks the nodes periodically while there are replicas, so the read rotation follows them without traffic; until `close()`. */
  watchReplicas(): void {
    if (this.replicas.length === 0 || this.watchTimer) return;
    this.watchTimer = setInterval(() => void this.checkNodes(), DATABASE_DEADLINES.nodeCheckIntervalMs);
    this.watchTimer.unref();
    void this.checkNodes();
  }

  /** Stops the checks, closes the replicas (once their background connection ends), then the primary. */
  async close(): Promise<void> {
    clearInterval(this.watchTimer);
    this.watchTimer = undefined;
    await Promise.all(
      this.replicas.map(async (replica) => {
        await replica.connecting;
        if (replica.dataSource.isInitialized) await replica.dataSource.destroy();
      }),
    );
    await this.primary.dataSource.destroy();
  }
}
