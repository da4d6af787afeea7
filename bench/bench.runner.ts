import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { finished } from 'node:stream';
import autocannon from 'autocannon';
import { freePort } from '../test/support/free-port';
import type { Scenario, ScenarioContext, Surface } from './scenarios';

/** The GraphQL peers: servers a user could pick instead of the service, serving its GraphQL operations only. */
export const PEER_NAMES = ['apollo', 'yoga', 'mercurius'] as const;

/** One of {@link PEER_NAMES}. */
export type PeerName = (typeof PEER_NAMES)[number];

/**
 * The systems measured: the service, the service built from another commit (`baseline`, with
 * `--baseline <git ref>`), the baselines (B1c is B1 with a key cache) and the GraphQL peers.
 */
export type SystemName = 'service' | 'baseline' | 'B1' | 'B1c' | 'B0' | PeerName;

/** Whether a system is a GraphQL peer. */
export const isPeer = (name: SystemName): name is PeerName => (PEER_NAMES as readonly string[]).includes(name);

/** A started server process. */
export interface RunningSystem {
  name: SystemName;
  url: string;
  pid: number;
  /** SIGTERM, then SIGKILL after 5 s; resolves once the process has exited. */
  stop: () => Promise<void>;
  /** The last {@link OUTPUT_TAIL_CHARACTERS} characters the process wrote to each stream so far. */
  output: () => { stdout: string; stderr: string };
}

/** How much of each output stream of a started system is kept: its tail, for error messages and probes. */
export const OUTPUT_TAIL_CHARACTERS = 16_000;

/** One autocannon run of one scenario against one system. */
export interface Measurement {
  /** Responses per second over the run. */
  rps: number;
  /** Latency percentiles, milliseconds (autocannon records whole milliseconds; {@link measureAtRate} tenths). */
  p50: number;
  p99: number;
  /** Mean latency, milliseconds: with autocannon from the throughput, connections × duration / responses (exact, unlike the histogram). */
  mean: number;
  /** Responses received. */
  total: number;
  /** Responses with a status not in the scenario's `expected`, plus connection errors (timeouts included). */
  unexpected: number;
  /** Count of each status received, e.g. `{ "200": 5120 }`. */
  statuses: Record<string, number>;
  /** Highest resident set size of the server during the run, MiB (sampled every 50 ms). */
  peakRssMb: number;
  /** The server process's user + system CPU time during the run, milliseconds ({@link cpuTimeMs}; NaN, null in JSON, when unreadable). */
  cpuMs: number;
  /** `cpuMs` over the responses received: server CPU time per request, milliseconds. */
  cpuMsPerRequest: number;
  /** Wall time between the two reads of `cpuMs`, milliseconds: `cpuMs / cpuWindowMs` is the cores the server used. */
  cpuWindowMs: number;
  /**
   * Of `cpuMs`, what the server spent after the run delivering the webhook events the run's creates left owed (bench/run.ts
   * `run`, bench/README.md "The service's set-up"), milliseconds; absent when nothing was owed.
   */
  afterRunCpuMs?: number;
}

const ROOT = path.resolve(__dirname, '..', '..');

/** Current resident set size of a process, MiB; 0 when unreadable (not Linux, or exited). */
export function rssMb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** The unit of utime and stime in /proc/<pid>/stat: USER_HZ, 100 on Linux (`getconf CLK_TCK`). */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU time a process has used so far, user + system, all its threads, milliseconds, read from
 * outside: the sum over /proc/<pid>/task/* of the first field of `schedstat`, the nanoseconds each
 * thread has run. Without schedstat (a kernel without CONFIG_SCHED_INFO), utime + stime of
 * /proc/<pid>/stat, in 10 ms clock ticks: the accounting `process.cpuUsage()` reads.
 *
 * @returns NaN when unreadable (not Linux, or exited).
 */
export function cpuTimeMs(pid: number): number {
  const nanoseconds = schedstatNs(pid);
  if (nanoseconds !== undefined) return nanoseconds / 1e6;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (in parentheses, may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

/** Nanoseconds on CPU of the live threads of a process, from schedstat; undefined when unreadable. */
function schedstatNs(pid: number): number | undefined {
  const onCpu = (thread: string) => Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, 'utf8').split(' ', 1)[0]);
  let total: number;
  try {
    total = onCpu(String(pid));
    for (const thread of readdirSync(`/proc/${pid}/task`)) {
      if (thread === String(pid)) continue;
      try {
        total += onCpu(thread);
      } catch {
        // A thread that ended between the listing and the read.
      }
    }
  } catch {
    return undefined;
  }
  return Number.isFinite(total) ? total : undefined;
}

/** The request that tells a system is ready, on the surface it serves: a list of one pet. */
function readinessRequest(surface: Surface, url: string, apiKey: string): [string, RequestInit] {
  const authorization = `Bearer ${apiKey}`;
  return surface === 'rest'
    ? [`${url}/v1/pets?limit=1`, { headers: { authorization } }]
    : [`${url}/graphql`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: '{"query":"{ pets(limit: 1) { id } }"}' }];
}

/**
 * Starts a server as a child process (`node <script>` from `cwd`, default the repository root) and waits
 * until a list of one pet with `apiKey` answers 200 (`GET /v1/pets?limit=1`, or its GraphQL
 * query for a system that serves GraphQL only).
 *
 * @param script - path of the built script, relative to `cwd`.
 * @param env - added to the current environment (PORT is chosen here).
 * @param options.nodeOptions - extra node flags, e.g. `--cpu-prof`.
 * @param options.surface - the surface that tells it is ready (default REST).
 * @param options.cwd - the folder it runs in (default the repository root), e.g. a baseline's worktree.
 * @throws when the process exits or is not ready within 30 s (its output is in the message).
 */
export async function startSystem(
  name: SystemName,
  script: string,
  env: Record<string, string>,
  apiKey: string,
  { nodeOptions = [], surface = 'rest', cwd = ROOT }: { nodeOptions?: string[]; surface?: Surface; cwd?: string } = {},
): Promise<RunningSystem> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [...nodeOptions, script], {
    cwd,
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Always drained, so a server that logs every request never blocks on a full pipe.
  let output = '';
  const tails = { stdout: '', stderr: '' };
  const keep = (stream: keyof typeof tails) => (chunk: Buffer) => {
    const text = chunk.toString();
    output = (output + text).slice(-8000);
    tails[stream] = (tails[stream] + text).slice(-OUTPUT_TAIL_CHARACTERS);
  };
  child.stdout!.on('data', keep('stdout'));
  child.stderr!.on('data', keep('stderr'));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
  };
  for (const deadline = Date.now() + 30_000; ;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode} before it was ready:\n${output}`);
    try {
      const response = await fetch(...readinessRequest(surface, url, apiKey));
      await response.arrayBuffer();
      if (response.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`${name} was not ready within 30 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { name, url, pid: child.pid!, stop, output: () => ({ ...tails }) };
}

/**
 * Sends each request of a scenario once (with fetch) and checks the answer: an expected
 * status, and for GraphQL no `errors` in a 200. Catches a scenario that would measure the
 * wrong thing (a GraphQL error answered in a 200) before any load is sent.
 *
 * @returns the body of the first response (used as B0's canned answer).
 * @throws naming the scenario, the status and the body.
 */
export async function probe(system: RunningSystem, scenario: Scenario, context: ScenarioContext): Promise<string> {
  let first: string | undefined;
  for (let request of scenario.requests(context)) {
    if (typeof request.setupRequest === 'function') request = request.setupRequest(request, {});
    const response = await fetch(system.url + request.path, {
      method: request.method,
      headers: request.headers as Record<string, string>,
      body: request.body as string | undefined,
    });
    const body = await response.text();
    const graphqlErrors = scenario.surface === 'graphql' && response.status === 200 && (JSON.parse(body) as { errors?: unknown }).errors;
    if (!scenario.expected.includes(response.status) || graphqlErrors) {
      throw new Error(
        `${system.name} ${scenario.surface} ${scenario.name}: ${request.method} ${request.path} answered ${response.status} ${body.slice(0, 300)}`,
      );
    }
    first ??= body;
  }
  return first!;
}

/** What a load generator measured, before the server's usage is added. */
type LoadResult = Omit<Measurement, 'peakRssMb' | 'cpuMs' | 'cpuMsPerRequest' | 'cpuWindowMs'>;

/**
 * Runs a load against a system, sampling the server's RSS every 50 ms and reading its CPU
 * time ({@link cpuTimeMs}) before and after; after, `settleMs` after the last answer, so that the
 * work a server does once it has answered (its onResponse hooks) counts.
 */
async function withServerUsage(system: RunningSystem, settleMs: number, load: () => Promise<LoadResult>): Promise<Measurement> {
  let peakRssMb = rssMb(system.pid);
  const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, rssMb(system.pid))), 50);
  const cpuBefore = cpuTimeMs(system.pid);
  const began = performance.now();
  try {
    const result = await load();
    if (settleMs > 0) await new Promise((resolve) => setTimeout(resolve, settleMs));
    const cpuMs = cpuTimeMs(system.pid) - cpuBefore;
    const cpuWindowMs = performance.now() - began;
    return {
      ...result,
      peakRssMb: Math.round(Math.max(peakRssMb, rssMb(system.pid))),
      cpuMs,
      cpuMsPerRequest: result.total > 0 ? cpuMs / result.total : NaN,
      cpuWindowMs,
    };
  } finally {
    clearInterval(sampler);
  }
}

/** Responses with a status the scenario does not expect, plus connection errors. */
const unexpectedOf = (scenario: Scenario, statuses: Record<string, number>, total: number, errors: number) =>
  total - scenario.expected.reduce((sum, code) => sum + (statuses[code] ?? 0), 0) + errors;

/**
 * Runs one scenario with autocannon against a system as fast as it answers, sampling the
 * server's RSS and reading its CPU time before and after.
 *
 * @param options.duration - seconds of load.
 * @param options.connections - concurrent keep-alive connections (no pipelining), each sending its next request when answered.
 * @param options.amount - requests to send instead of a duration (e.g. a warm-up of a known size); `duration` is then ignored.
 * @param options.settleMs - milliseconds after the last answer before the CPU time is read (default 0).
 */
export function measure(
  system: RunningSystem,
  scenario: Scenario,
  context: ScenarioContext,
  options: { duration: number; connections: number; amount?: number; settleMs?: number },
): Promise<Measurement> {
  return withServerUsage(system, options.settleMs ?? 0, async () => {
    const result = await autocannon({
      url: system.url,
      connections: options.connections,
      duration: options.duration,
      ...(options.amount !== undefined && { amount: options.amount }),
      requests: scenario.requests(context),
      timeout: 10,
      // autocannon stops at its next sample tick (default every 1 s): sample often so short runs end on
      // time, and a run of `amount` requests, short and timed by its CPU, without 100 ms idle at its end.
      sampleInt: options.amount === undefined ? 100 : 10,
    });
    const statuses = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, { count }]) => [code, count ?? 0]));
    const total = Object.values(statuses).reduce((sum, count) => sum + count, 0);
    return {
      rps: total / result.duration,
      p50: result.latency.p50,
      p99: result.latency.p99,
      mean: total > 0 ? (options.connections * result.duration * 1000) / total : 0,
      total,
      unexpected: unexpectedOf(scenario, statuses, total, result.errors),
      statuses,
    };
  });
}

/**
 * Sends one scenario's requests at a fixed rate, evenly spaced (every millisecond, the requests
 * then due), over at most `connections` keep-alive connections, sampling the server's RSS and
 * reading its CPU time before and after. Open loop: a request is sent when due whether or not
 * earlier ones were answered, and its latency counts from then, so time spent waiting for a
 * free connection counts too. (autocannon's `overallRate` sends each connection's share of a
 * second at full speed at the start of the second: bursts at the maximum rate, not a rate.)
 *
 * @param options.duration - seconds of sending; the run then waits for the last answers, and
 *   `rps` is the responses over the whole time (below `rate` when the server fell behind).
 * @param options.rate - requests per second; the scenario's request sequence is cycled.
 * @param options.settleMs - milliseconds after the last answer before the CPU time is read (default 0).
 * @param options.onAnswer - given each answer's status, body and the moment it ended (`performance.timeOrigin +
 *   performance.now()`, comparable across processes of this machine); without it, bodies are not kept.
 */
export function measureAtRate(
  system: RunningSystem,
  scenario: Scenario,
  context: ScenarioContext,
  options: {
    duration: number;
    connections: number;
    rate: number;
    settleMs?: number;
    onAnswer?: (status: number, body: string, answeredAt: number) => void;
  },
): Promise<Measurement> {
  return withServerUsage(system, options.settleMs ?? 0, async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
    const sequence = scenario.requests(context);
    const latencies: number[] = [];
    const statuses: Record<string, number> = {};
    let errors = 0;
    const send = (index: number) =>
      new Promise<void>((resolve) => {
        const sentAt = performance.now();
        let request = sequence[index % sequence.length];
        if (typeof request.setupRequest === 'function') request = request.setupRequest(request, {});
        const body = request.body as string | undefined;
        // As autocannon sends them: a body with its length, not chunked.
        const headers = { ...request.headers, ...(body !== undefined && { 'content-length': Buffer.byteLength(body) }) };
        const outgoing = http.request(system.url + request.path, { method: request.method, headers, agent, timeout: 10_000 }, (response) => {
          const chunks: Buffer[] = [];
          if (options.onAnswer) response.on('data', (chunk: Buffer) => chunks.push(chunk));
          else response.resume();
          finished(response, (error) => {
            if (error) errors++;
            else {
              const answered = performance.now();
              options.onAnswer?.(response.statusCode!, Buffer.concat(chunks).toString(), performance.timeOrigin + answered);
              latencies.push(answered - sentAt);
              statuses[response.statusCode!] = (statuses[response.statusCode!] ?? 0) + 1;
            }
            resolve();
          });
        });
        outgoing.once('timeout', () => outgoing.destroy(new Error('timed out')));
        outgoing.once('error', () => {
          errors++;
          resolve();
        });
        outgoing.end(body);
      });
    const began = performance.now();
    const dueAt = (index: number) => began + (index * 1000) / options.rate;
    const count = Math.max(1, Math.round(options.duration * options.rate));
    const sent: Array<Promise<void>> = [];
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        while (sent.length < count && dueAt(sent.length) <= performance.now()) sent.push(send(sent.length));
        if (sent.length === count) {
          clearInterval(timer);
          resolve();
        }
      }, 1);
    });
    await Promise.all(sent);
    const seconds = (performance.now() - began) / 1000;
    agent.destroy();
    const sorted = latencies.sort((a, b) => a - b);
    const percentile = (p: number) => (sorted.length > 0 ? Math.round(sorted[Math.ceil(p * sorted.length) - 1] * 10) / 10 : 0);
    const total = sorted.length;
    return {
      rps: total / seconds,
      p50: percentile(0.5),
      p99: percentile(0.99),
      mean: total > 0 ? sorted.reduce((sum, latency) => sum + latency, 0) / total : 0,
      total,
      unexpected: unexpectedOf(scenario, statuses, total, errors),
      statuses,
    };
  });
}
