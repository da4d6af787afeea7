import { createConnection } from 'mysql2/promise';

/** Latency of one kind of read, milliseconds. */
export interface ReadLatency {
  reads: number;
  mean: number;
  p99: number;
}

/** Both halves of the comparison: the same reads without and with the causality wait. */
export interface CausalReadsResult {
  syncWaitOff: ReadLatency;
  syncWaitOn: ReadLatency;
}

function latencyOf(samples: number[]): ReadLatency {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return { reads: sorted.length, mean, p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] };
}

/**
 * The price of the service's causal reads on a Galera node (docs/operations.md "Scale-out notes"): the
 * service's getPet statement, one connection, one read at a time, with `wsrep_sync_wait = 0`
 * and with `= 1` (what the service sets on a Galera node's sessions), in alternating rounds.
 *
 * @param url - a database on a Galera node, seeded with pets 1 to `petCount`.
 * @param options.reads - reads per mode, split over 4 alternating rounds.
 * @returns each mode's mean and p99 latency, milliseconds.
 * @throws the driver's error when the node cannot be reached.
 */
export async function measureCausalReads(url: string, { reads, petCount }: { reads: number; petCount: number }): Promise<CausalReadsResult> {
  const connection = await createConnection(url);
  const samples: Record<0 | 1, number[]> = { 0: [], 1: [] };
  try {
    for (let round = 0; round < 4; round++) {
      const mode = (round % 2) as 0 | 1;
      await connection.query(`SET SESSION wsrep_sync_wait = ${mode}`);
      for (let i = 0; i < reads / 2; i++) {
        const id = 1 + Math.floor(Math.random() * petCount);
        const start = performance.now();
        await connection.execute('SELECT id, name, category_id, status FROM pet WHERE id = ?', [id]);
        samples[mode].push(performance.now() - start);
      }
    }
  } finally {
    await connection.end();
  }
  return { syncWaitOff: latencyOf(samples[0]), syncWaitOn: latencyOf(samples[1]) };
}
