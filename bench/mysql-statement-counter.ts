import net from 'node:net';

/** What the counter saw of one kind of statement: how many, and the time from sending each to the first byte of its answer. */
export interface StatementTally {
  count: number;
  /** Milliseconds, summed: the database's time for the statement plus one loopback hop each way. */
  ms: number;
}

/** One transaction on one connection, START TRANSACTION (or BEGIN) to COMMIT or ROLLBACK, as the counter saw it. */
export interface SeenTransaction {
  /** Each statement's kind (see {@link StatementCounter.classify}), in order, the START and the COMMIT included. */
  kinds: string[];
  /** Statements sent for it: `kinds`, and the SET TRANSACTION ISOLATION LEVEL just before its START when there was one. */
  statements: number;
  /** From sending its first statement (the isolation level's SET when one precedes it) to the first byte of the COMMIT's answer. */
  ms: number;
}

/**
 * A TCP proxy between one system and MariaDB/MySQL that reads the commands the system sends (the client/server protocol:
 * a packet is a 3-byte length, a sequence number, then the payload; a command is a client packet with sequence 0, its
 * first byte the command, COM_QUERY's rest the SQL text) and tallies them by kind, without touching the bytes. The
 * database server is shared with other work, so its global counters (`SHOW GLOBAL STATUS LIKE 'Com_%'`) would count
 * that too; the proxy sees the one system's statements only. It adds one loopback hop per statement: use it to count,
 * not while measuring throughput.
 */
export class StatementCounter {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  /** Kind → tally. */
  readonly tallies = new Map<string, StatementTally>();
  /** Transactions that committed or rolled back, in the order they ended. */
  readonly transactions: SeenTransaction[] = [];

  constructor(
    private readonly target: { host: string; port: number },
    private readonly classify: (sql: string) => string,
  ) {}

  /** Starts listening on a free port of 127.0.0.1. @returns that port. */
  async listen(): Promise<number> {
    this.server = net.createServer((client) => this.relay(client));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as net.AddressInfo).port;
  }

  /** Forgets what it counted so far (the connections stay). */
  reset(): void {
    this.tallies.clear();
    this.transactions.length = 0;
  }

  /** Stops listening and closes every relayed connection. */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private relay(client: net.Socket): void {
    const upstream = net.connect(this.target);
    this.sockets.add(client).add(upstream);
    let pending: Buffer = Buffer.alloc(0);
    /** Statements sent and not yet answered (a client sends one at a time; the queue is for safety). */
    const awaiting: Array<{ kind: string; sentAt: number }> = [];
    let transaction: { kinds: string[]; startedAt: number; isolation: boolean } | undefined;
    /** A SET TRANSACTION ISOLATION LEVEL just before a START: the transaction's time starts there. */
    let isolationSetAt: number | undefined;
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= 4) {
        const length = pending.readUIntLE(0, 3);
        if (pending.length < 4 + length) break;
        const sequence = pending[3];
        const payload = pending.subarray(4, 4 + length);
        pending = pending.subarray(4 + length);
        if (sequence !== 0 || length === 0) continue;
        const now = performance.now();
        const command = payload[0];
        const kind = command === 0x03 ? this.classify(payload.subarray(1).toString('utf8')) : `command 0x${command.toString(16)}`;
        awaiting.push({ kind, sentAt: now });
        if (kind === 'SET TRANSACTION') isolationSetAt = now;
        else if (kind === 'START TRANSACTION') {
          transaction = { kinds: [], startedAt: isolationSetAt ?? now, isolation: isolationSetAt !== undefined };
          isolationSetAt = undefined;
        } else isolationSetAt = undefined;
        transaction?.kinds.push(kind);
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      client.write(chunk);
      // The first bytes after a command are its answer's start (a result set may take more chunks; they are not commands).
      const answered = awaiting.shift();
      if (!answered) return;
      const now = performance.now();
      const tally = this.tallies.get(answered.kind) ?? { count: 0, ms: 0 };
      tally.count++;
      tally.ms += now - answered.sentAt;
      this.tallies.set(answered.kind, tally);
      if (transaction && (answered.kind === 'COMMIT' || answered.kind === 'ROLLBACK')) {
        this.transactions.push({
          kinds: transaction.kinds,
          statements: transaction.kinds.length + (transaction.isolation ? 1 : 0),
          ms: now - transaction.startedAt,
        });
        transaction = undefined;
      }
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  }
}
