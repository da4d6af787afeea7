import { readFileSync } from 'node:fs';
import autocannon, { type Request } from 'autocannon';
import { prepareDatabase } from './bench-database';
import { type RunningSystem, cpuTimeMs, startSystem } from './bench.runner';
import { HEAP_CAP_NODE_OPTION } from '../src/limits';
import { freePort } from '../test/support/free-port';

/**
 * The resident memory the Kubernetes Deployment is sized from (docs/operations.md "Kubernetes", "Resources"):
 * the built service under the heap cap, on MariaDB/MySQL (BENCH_DATABASE_URL's server, database
 * `petstore_pod_memory`, replaced) and Redis (REDIS_URL, default redis://127.0.0.1:6379, under keys of its own),
 * idle, under REST and GraphQL load, then under GraphQL documents it has never seen (the growth the heap cap bounds),
 * then idle again; VmRSS and VmHWM of /proc/<pid>/status every 250 ms, and the CPU each phase used.
 *
 * Run: `npm run -s bench:install && npx tsc -b . bench && node dist/bench/pod-memory.js`; prints one JSON summary.
 */
const SAMPLE_MS = 250;
const CONNECTIONS = 16;
const server = new URL(process.env.BENCH_DATABASE_URL ?? 'mysql://root@127.0.0.1:3306/petstore_bench');
server.pathname = '/petstore_pod_memory';
const DATABASE_URL = server.toString();
const FIELDS = '{ id name status categoryId }';

/** VmRSS and VmHWM (the peak) of a process, MiB. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]) / 1024;
  return { rss: mib('VmRSS'), peak: mib('VmHWM') };
}

/** GraphQL documents never sent before: one to four aliased lists each, every other one padded with a 32 KB comment. */
class NewDocuments {
  sent = 0;

  /** The next document's request body. */
  next(): string {
    const n = this.sent++;
    const lists = Array.from({ length: (n % 4) + 1 }, (_, k) => {
      const status = k % 2 ? ', status: available' : '';
      return `a${k}_${n}: pets(limit: ${((n + k) % 20) + 1}${status}) ${k % 3 ? FIELDS : '{ id name }'}`;
    });
    const padding = n % 2 ? `# ${'padding '.repeat(4000)}\n` : '';
    return JSON.stringify({ query: `${padding}query Q${n} { ${lists.join(' ')} }` });
  }
}

/** Load on `system` for `seconds` with `requests` in turn on each connection; the answers that were not 2xx are counted. */
function load(system: RunningSystem, seconds: number, requests: Request[]) {
  return new Promise<{ requests: number; perSecond: number; non2xx: number }>((resolve, reject) => {
    autocannon({ url: system.url, connections: CONNECTIONS, duration: seconds, requests }, (error, result) =>
      error
        ? reject(error instanceof Error ? error : new Error(String(error)))
        : resolve({ requests: result.requests.total, perSecond: result.requests.average, non2xx: result.non2xx }),
    );
  });
}

async function main(): Promise<void> {
  const apiKey = await prepareDatabase(DATABASE_URL, 2_000);
  const namespace = `pod-memory-${process.pid}`;
  const system = await startSystem(
    'service',
    'dist/src/main.js',
    {
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      DATABASE_URL,
      REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_NAMESPACE: `${namespace}:`,
      RATE_LIMIT_MAX: '1000000000',
      METRICS_PORT: String(await freePort()),
      NODE_OPTIONS: HEAP_CAP_NODE_OPTION,
    },
    apiKey,
  );
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const known: Request[] = [
    { method: 'GET', path: '/v1/pets?limit=20', headers },
    { method: 'POST', path: '/graphql', headers, body: JSON.stringify({ query: `{ pets(limit: 20) ${FIELDS} }` }) },
    { method: 'GET', path: '/v1/pets/5', headers },
    { method: 'POST', path: '/v1/pets', headers, body: JSON.stringify({ name: 'Rex', categoryId: 1 }) },
  ];
  const documents = new NewDocuments();
  const unseen: Request = { method: 'POST', path: '/graphql', headers, setupRequest: (request) => ({ ...request, body: documents.next() }) };
  const idle = (seconds: number) => new Promise<object>((resolve) => setTimeout(() => resolve({}), seconds * 1000));
  const phases: Array<[string, () => Promise<object>]> = [
    ['idle after start', () => idle(10)],
    ['REST and GraphQL load, one GraphQL document', () => load(system, 40, known)],
    ['GraphQL documents never seen before, beside REST lists', () => load(system, 120, [unseen, known[0], unseen])],
    ['idle after load', () => idle(15)],
  ];
  const results = [];
  try {
    for (const [name, run] of phases) {
      const samples: number[] = [];
      const timer = setInterval(() => samples.push(memory(system.pid).rss), SAMPLE_MS);
      const [startMs, startCpuMs] = [Date.now(), cpuTimeMs(system.pid)];
      const outcome = await run();
      clearInterval(timer);
      const seconds = (Date.now() - startMs) / 1000;
      const steady = samples.slice(Math.floor(samples.length / 2));
      results.push({
        phase: name,
        ...outcome,
        cores: +((cpuTimeMs(system.pid) - startCpuMs) / 1000 / seconds).toFixed(2),
        rssMiB: { steady: +(steady.reduce((a, b) => a + b, 0) / steady.length).toFixed(1), max: +Math.max(...samples).toFixed(1) },
        peakSinceStartMiB: +memory(system.pid).peak.toFixed(1),
      });
    }
  } finally {
    await system.stop();
  }
  console.log(JSON.stringify({ heapCap: HEAP_CAP_NODE_OPTION, newDocuments: documents.sent, phases: results }, null, 2));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
