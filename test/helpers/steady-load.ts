import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { startNode } from './processes';

/**
 * Steady traffic on built servers while a database node fails under them, and the
 * checks of what every answer must be (test/system/topology-faults.test.ts). Times are
 * `performance.now()` milliseconds of this process.
 */

/** One built server under load. */
export interface LoadTarget {
  /** A short name used in the records, e.g. `A`. */
  readonly name: string;
  /** Its base URL, e.g. `http://127.0.0.1:40123`. */
  readonly base: string;
  /** The process, with its collected output. */
  readonly server: ReturnType<typeof startNode>;
}

/** What a record is the answer to. */
export type Operation = 'createPet' | 'listPets' | 'getPet' | 'readyz';

/** One request and its answer (or the lack of one). */
export interface Answer {
  /** The instance asked. */
  instance: string;
  operation: Operation;
  /** When the request was sent and when its answer (body included) had arrived, or it failed (ms). */
  start: number;
  end: number;
  /** The HTTP status; 0 when no answer came (client timeout, refused or reset connection). */
  status: number;
  /** The Retry-After header, or null. */
  retryAfter: string | null;
  /** The parsed JSON body, or the text when it is not JSON. */
  body: unknown;
  /** Why no answer came (status 0). */
  failure?: string;
  /** createPet: the name sent; getPet: the name expected. */
  name?: string;
  /** createPet: the id answered (201); getPet: the id asked for. */
  petId?: number;
  /** getPet: the instance through which the pet was created (its 201 had arrived before this request started). */
  createdVia?: string;
}

/** How much traffic {@link startSteadyLoad} makes. */
export interface LoadOptions {
  /** Concurrent create loops per instance (default 2); each create that answers 201 is read back through the other instance. */
  creators?: number;
  /** Concurrent read loops per instance (default 2): listPets, then getPet of the pet last created through the other instance. */
  readers?: number;
  /** The client's timeout of one request (ms, default 8000): an aborted request is recorded with status 0. */
  timeoutMs?: number;
  /** The pause after each create of a create loop (ms, default 0): paced creates, for latencies. */
  createPauseMs?: number;
  /** The pause between two `/readyz` probes of one instance (ms, default 200). */
  probeIntervalMs?: number;
  /** Start of every pet name, e.g. the scenario's name (letters, digits and `-` only). */
  namePrefix: string;
}

/** Load running; `stop()` ends it. */
export interface SteadyLoad {
  /** Every answer so far (the array grows while the load runs). */
  readonly answers: readonly Answer[];
  /** When the load started (ms). */
  readonly startedAt: number;
  /** Stops every loop, waits for the requests in flight, and returns every answer. */
  stop(): Promise<Answer[]>;
}

const PAUSE_AFTER_NO_ANSWER_MS = 50;

/**
 * Sends one request and records it; never throws.
 *
 * @param timeoutMs - the client's timeout (ms); an abort is recorded as status 0.
 */
async function send(
  target: LoadTarget,
  operation: Operation,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
  timeoutMs: number,
): Promise<Answer> {
  const start = performance.now();
  try {
    const response = await fetch(`${target.base}${path}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { instance: target.name, operation, start, end: performance.now(), status: response.status, retryAfter: response.headers.get('retry-after'), body };
  } catch (error) {
    const failure = `${(error as Error).name}: ${(error as Error).message}${(error as { cause?: Error }).cause ? ` (${(error as { cause: Error }).cause.message})` : ''}`;
    return { instance: target.name, operation, start, end: performance.now(), status: 0, retryAfter: null, body: null, failure };
  }
}

/**
 * Starts steady load on every target, each request awaited before the next, no pause: per
 * instance `creators` loops of POST /v1/pets (a unique name; every other create with an
 * Idempotency-Key of its own), each 201 followed by GET /v1/pets/{id} through the next instance;
 * `readers` loops of GET /v1/pets?limit=5 then GET /v1/pets/{id} of the pet last created through
 * the next instance; and a `/readyz` probe every `probeIntervalMs`.
 *
 * @param targets - the instances (at least one; with one, "the next instance" is itself).
 * @param apiKey - sent as `Authorization: Bearer <apiKey>` (not to /readyz).
 * @returns the running load; call `stop()` before checking its answers.
 */
export function startSteadyLoad(targets: readonly LoadTarget[], apiKey: string, options: LoadOptions): SteadyLoad {
  const { creators = 2, readers = 2, timeoutMs = 8000, createPauseMs = 0, probeIntervalMs = 200, namePrefix } = options;
  const answers: Answer[] = [];
  const startedAt = performance.now();
  let running = true;
  let counter = 0;
  const run = randomBytes(3).toString('hex');
  const latestCreated = new Map<string, { id: number; name: string }>();
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const record = (answer: Answer) => {
    answers.push(answer);
    return answer;
  };
  const pauseIfNoAnswer = (answer: Answer) => (answer.status === 0 ? sleep(PAUSE_AFTER_NO_ANSWER_MS) : undefined);

  const getPet = async (target: LoadTarget, pet: { id: number; name: string }, createdVia: string) => {
    const answer = await send(target, 'getPet', `/v1/pets/${pet.id}`, { headers }, timeoutMs);
    await pauseIfNoAnswer(record({ ...answer, petId: pet.id, name: pet.name, createdVia }));
  };

  const creator = async (target: LoadTarget, next: LoadTarget) => {
    while (running) {
      const n = counter++;
      const name = `${namePrefix}-${run}-${n}`;
      const extra: Record<string, string> = n % 2 === 0 ? { 'idempotency-key': `${name}-key` } : {};
      const body = JSON.stringify({ name, categoryId: 1 + (n % 7) });
      const answer = record({ ...(await send(target, 'createPet', '/v1/pets', { method: 'POST', headers: { ...headers, ...extra }, body }, timeoutMs)), name });
      if (answer.status === 201) {
        const pet = { id: Number((answer.body as { id: unknown }).id), name };
        answer.petId = pet.id;
        latestCreated.set(target.name, pet);
        if (running) await getPet(next, pet, target.name);
      }
      await pauseIfNoAnswer(answer);
      if (createPauseMs > 0) await sleep(createPauseMs);
    }
  };

  const reader = async (target: LoadTarget, next: LoadTarget) => {
    while (running) {
      await pauseIfNoAnswer(record(await send(target, 'listPets', '/v1/pets?limit=5', { headers }, timeoutMs)));
      const pet = latestCreated.get(next.name);
      if (pet && running) await getPet(target, pet, next.name);
    }
  };

  const prober = async (target: LoadTarget) => {
    while (running) {
      record(await send(target, 'readyz', '/readyz', {}, timeoutMs));
      await sleep(probeIntervalMs);
    }
  };

  const loops = targets.flatMap((target, i) => {
    const next = targets[(i + 1) % targets.length];
    return [...Array.from({ length: creators }, () => creator(target, next)), ...Array.from({ length: readers }, () => reader(target, next)), prober(target)];
  });
  return {
    answers,
    startedAt,
    async stop() {
      running = false;
      await Promise.all(loops);
      return answers;
    },
  };
}

/** A list of violations of one promise, each a short line; empty when it held. */
export type Violations = string[];

/** How one violation is shown: the instance, the operation, when it started relative to `origin` (s, + or -), what went wrong. */
function line(answer: Answer, origin: number, what: string): string {
  const seconds = (answer.start - origin) / 1000;
  return `${answer.instance} ${answer.operation} at ${seconds < 0 ? '' : '+'}${seconds.toFixed(1)}s: ${what}`;
}

/**
 * Shortens a list of violations so a failed assertion stays readable: violations that differ only
 * in their numbers (times, ids) and come from the same instance and operation are one kind, shown
 * by its first example and how many more there were.
 *
 * @param maxKinds - how many kinds are shown; the rest are counted in a last line.
 */
export function abridge(violations: Violations, maxKinds = 6): Violations {
  const kinds = new Map<string, { example: string; count: number }>();
  for (const violation of violations) {
    const key = violation
      .replace(/^(\S+ \S+) at [^:]+: /, '$1: ')
      .replace(/\d+/g, '#')
      .slice(0, 80);
    const kind = kinds.get(key);
    if (kind) kind.count++;
    else kinds.set(key, { example: violation, count: 1 });
  }
  const shown = [...kinds.values()].slice(0, maxKinds).map(({ example, count }) => (count > 1 ? `${example} (and ${count - 1} more like it)` : example));
  const rest = [...kinds.values()].slice(maxKinds).reduce((sum, { count }) => sum + count, 0);
  return rest > 0 ? [...shown, `… and ${rest} more of ${kinds.size - maxKinds} other kinds`] : shown;
}

/**
 * Promise 1: every answer arrives within `limitMs`, and every request gets one.
 *
 * @param origin - the time shown as +0 s in the lines (ms), e.g. the moment of the fault.
 */
export function answeredWithin(answers: readonly Answer[], limitMs: number, origin: number): Violations {
  return answers.flatMap((a) => {
    if (a.status === 0) return [line(a, origin, `no answer after ${Math.round(a.end - a.start)} ms (${a.failure})`)];
    if (a.end - a.start > limitMs) return [line(a, origin, `${a.status} after ${Math.round(a.end - a.start)} ms`)];
    return [];
  });
}

/** True when `body` is the Error shape `{code, message, status}` with `status` the HTTP status. */
function isErrorShape(body: unknown, status: number): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const { code, message, status: bodyStatus } = body as Record<string, unknown>;
  return typeof code === 'string' && typeof message === 'string' && bodyStatus === status;
}

/**
 * Promise 2, on the load's answers (not /readyz): no 5xx but 503 and 504; every 503 carries
 * Retry-After; 504 only for createPet (an unconfirmed COMMIT); every 4xx/5xx body is the Error
 * shape `{code, message, status}`.
 */
export function statusesKept(answers: readonly Answer[], origin: number): Violations {
  return answers
    .filter((a) => a.operation !== 'readyz' && a.status >= 400)
    .flatMap((a) => {
      const code = isErrorShape(a.body, a.status) ? (a.body as { code: string }).code : undefined;
      const what = `${a.status} ${code ?? JSON.stringify(a.body).slice(0, 120)}`;
      if (a.status >= 500 && a.status !== 503 && a.status !== 504) return [line(a, origin, what)];
      if (a.status === 503 && a.retryAfter === null) return [line(a, origin, `${what} without Retry-After`)];
      if (a.status === 504 && a.operation !== 'createPet') return [line(a, origin, `${what}: 504 is only for a create`)];
      if (code === undefined) return [line(a, origin, `${what}: not the Error shape`)];
      return [];
    });
}

/** Promise 3: the process still runs and printed no uncaught error. */
export function processesAlive(targets: readonly LoadTarget[]): Violations {
  return targets.flatMap(({ name, server }) => {
    const problems: string[] = [];
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      problems.push(`${name} exited (code ${server.child.exitCode}, signal ${server.child.signalCode}): ${server.output.stderr.slice(-300)}`);
    }
    const uncaught = /uncaught/i.exec(server.output.stderr + server.output.stdout);
    if (uncaught) {
      const text = server.output.stderr + server.output.stdout;
      problems.push(`${name} printed "${text.slice(Math.max(0, uncaught.index - 60), uncaught.index + 200)}"`);
    }
    return problems;
  });
}

/**
 * Promise 4: every request of the load that starts more than `graceMs` after `backAt` is 2xx
 * (getPet: 200).
 *
 * @param backAt - when the failed node was back (ms).
 * @param allowStaleGetPet - true on an async replica, where docs/operations.md ("Scale-out notes") lets getPet answer 404 until the row has replicated.
 */
export function recoveredAfter(answers: readonly Answer[], backAt: number, graceMs: number, allowStaleGetPet = false): Violations {
  return answers
    .filter((a) => a.operation !== 'readyz' && a.start > backAt + graceMs)
    .filter((a) => !(a.status >= 200 && a.status < 300) && !(allowStaleGetPet && a.operation === 'getPet' && a.status === 404))
    .map((a) => line(a, backAt, `${a.status} ${a.status === 0 ? a.failure : JSON.stringify(a.body).slice(0, 120)} (+ from the node's return)`));
}

/** One node in the body of `/readyz` (the fields asserted; more may follow). */
interface ReadyNode {
  name: string;
  role: string;
  ready: boolean;
}

/** The `nodes` array of a /readyz body, or undefined when it has none. */
function nodesOf(answer: Answer): ReadyNode[] | undefined {
  const nodes = (answer.body as { nodes?: unknown } | null)?.nodes;
  return Array.isArray(nodes) ? (nodes as ReadyNode[]) : undefined;
}

/** What /readyz of one instance must say around a fault: see {@link readinessKept}. */
export interface ReadinessExpectation {
  /** The instance whose probes are checked. */
  instance: string;
  /**
   * `own`: its own server (DATABASE_URL) is down, paused or not Synced between `faultAt` and
   * `backAt`; `replica`: a replica it reads from is (or lags for ever), and /readyz must stay 200.
   */
  fault: 'own' | 'replica';
  faultAt: number;
  backAt: number;
  /** How soon after `faultAt` the probes must tell (ms). */
  detectMs: number;
  /** How soon after `backAt` an `own` instance must be ready again (ms). */
  readyAgainMs: number;
  /**
   * When the fault was undone (ms: the node resumed, or started again), if it was: from then
   * until `backAt` (when the test sees it serve, or rejoined) only the node's own account tells
   * whether it serves, so probes then may be 200 or 503.
   */
  undoneAt?: number;
}

/**
 * Promise 5, on the `/readyz` probes: every body has a `nodes` array; a 200 is `{status: "ok"}`,
 * a 503 the Error shape with SERVICE_UNAVAILABLE. With `fault: 'own'`, every probe started
 * after `faultAt + detectMs` and answered before `backAt` (`undoneAt` when set) is 503 (there must be one when that span is at least
 * 500 ms long), and every probe started `readyAgainMs` after `backAt` is 200. With
 * `fault: 'replica'`, every probe is 200, and those started between `faultAt + detectMs` and
 * `backAt` list a `role: "replica"` node with `ready: false`.
 */
export function readinessKept(answers: readonly Answer[], e: ReadinessExpectation): Violations {
  const probes = answers.filter((a) => a.operation === 'readyz' && a.instance === e.instance);
  const violations: Violations = [];
  const downUntil = e.undoneAt ?? e.backAt;
  // Answered while the node was still down: a probe answered after it is back may truthfully say 200.
  const inFault = (a: Answer) => a.start >= e.faultAt + e.detectMs && a.end <= downUntil;
  for (const a of probes) {
    const nodes = nodesOf(a);
    const body = JSON.stringify(a.body).slice(0, 160);
    if (a.status !== 0 && !nodes) violations.push(line(a, e.faultAt, `${a.status} without a nodes array: ${body}`));
    if (a.status === 200 && (a.body as { status?: unknown } | null)?.status !== 'ok') violations.push(line(a, e.faultAt, `200 but ${body}`));
    if (a.status === 503 && (!isErrorShape(a.body, 503) || (a.body as { code: string }).code !== 'SERVICE_UNAVAILABLE')) {
      violations.push(line(a, e.faultAt, `503 but ${body}`));
    }
    if (e.fault === 'own') {
      if (inFault(a) && a.status !== 503) violations.push(line(a, e.faultAt, `${a.status} while its server is down: ${body}`));
      if (a.start > e.backAt + e.readyAgainMs && a.status !== 200)
        violations.push(line(a, e.faultAt, `${a.status} ${e.readyAgainMs} ms after its server was back: ${body}`));
    } else {
      if (a.status !== 200) violations.push(line(a, e.faultAt, `${a.status} though only a replica failed: ${body}`));
      if (inFault(a) && !nodes?.some((node) => node.role === 'replica' && node.ready === false)) {
        violations.push(line(a, e.faultAt, `no replica with ready: false while it is out: ${body}`));
      }
    }
  }
  if (downUntil - (e.faultAt + e.detectMs) >= 500 && !probes.some(inFault)) violations.push(`${e.instance}: no /readyz probe answered while the node was out`);
  return violations;
}

/** Runs SQL on a database node (test/support/mariadb-topology.ts `MariadbNode.query`). */
export type Query = (sql: string) => Promise<Record<string, unknown>[]>;

const SAFE_NAME = /^[A-Za-z0-9-]+$/;

/** Rows of `sql` + a list of values, asked in chunks of 500 (values are inlined: numbers, or names of {@link SAFE_NAME}). */
async function inChunks(query: Query, sql: (list: string) => string, values: readonly (number | string)[]): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (let i = 0; i < values.length; i += 500) {
    const list = values
      .slice(i, i + 500)
      .map((value) => {
        if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
        if (typeof value === 'string' && SAFE_NAME.test(value)) return `'${value}'`;
        throw new Error(`not a safe SQL value: ${String(value)}`);
      })
      .join(',');
    rows.push(...(await query(sql(list))));
  }
  return rows;
}

/**
 * Promises 6 and 7, once the failed node is back and caught up: every create answered 201 is
 * stored (`lost` lists those that are not), and no create answered 503 is (`storedAfter503`).
 *
 * @param query - runs SQL on the primary (or a Synced Galera node) of the service's database.
 * @param table - the service's pet table, qualified, e.g. `` `petstore`.`pet` ``.
 * @throws the query's error.
 */
export async function createsKept(answers: readonly Answer[], query: Query, table: string): Promise<{ lost: Violations; storedAfter503: Violations }> {
  const creates = answers.filter((a) => a.operation === 'createPet');
  const acknowledged = creates.filter((a) => a.status === 201);
  const refused = creates.filter((a) => a.status === 503);
  const storedIds = new Set(
    (
      await inChunks(
        query,
        (list) => `SELECT id FROM ${table} WHERE id IN (${list})`,
        acknowledged.map((a) => a.petId!),
      )
    ).map((row) => Number(row.id)),
  );
  const storedNames = new Set(
    (
      await inChunks(
        query,
        (list) => `SELECT name FROM ${table} WHERE name IN (${list})`,
        refused.map((a) => a.name!),
      )
    ).map((row) => String(row.name)),
  );
  return {
    lost: acknowledged.filter((a) => !storedIds.has(a.petId!)).map((a) => `${a.instance} created ${a.name} as id ${a.petId} (201), not stored`),
    storedAfter503: refused.filter((a) => storedNames.has(a.name!)).map((a) => `${a.instance} answered 503 to ${a.name}, which is stored`),
  };
}

/**
 * Promises 8 and 9: getPet of a pet whose create had been acknowledged (201) before the request
 * started never answers 404, for requests started within [`from`, `until`].
 */
export function noStaleReads(answers: readonly Answer[], origin: number, from = -Infinity, until = Infinity): Violations {
  return answers
    .filter((a) => a.operation === 'getPet' && a.status === 404 && a.start >= from && a.start <= until)
    .map((a) => line(a, origin, `404 for pet ${a.petId}, created through ${a.createdVia} (201 received before)`));
}

/** A one-line summary of a scenario's answers: counts by operation and status, and the worst latency (ms). */
export function summary(answers: readonly Answer[]): string {
  const counts = new Map<string, number>();
  let worst = { ms: 0, what: '' };
  for (const a of answers) {
    const key = `${a.operation} ${a.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const ms = a.end - a.start;
    if (ms > worst.ms) worst = { ms, what: `${a.instance} ${a.operation} ${a.status}` };
  }
  const parts = [...counts.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, n]) => `${key}: ${n}`);
  return `${answers.length} answers (${parts.join(', ')}); worst ${Math.round(worst.ms)} ms (${worst.what})`;
}

/** How long {@link feedKept} waits for the sequencer to stamp the last commits (ms): its lease and claim, with slack. */
const STAMPED_WITHIN_MS = 10_000;

/**
 * Promise 10 (docs/events.md): every stored pet is in the change feed exactly once, once the sequencer has caught up
 * (waited for up to 10 s): no row left unstamped, positions 1 … n with no gap and no repeat, and the feed's head at n.
 * With {@link createsKept}'s promise 6, every create answered 201 is in the feed; a create answered 504 is in it iff stored.
 *
 * @param table - the service's pet table, qualified, e.g. `` `petstore`.`pet` ``; its `pet_feed` is beside it.
 * @returns the violations, and how many events the feed holds.
 * @throws the query's error.
 */
export async function feedKept(query: Query, table: string): Promise<{ violations: Violations; events: number }> {
  const feedTable = table.replace(/`pet`$/, '`pet_feed`');
  const deadline = performance.now() + STAMPED_WITHIN_MS;
  let unstamped: Record<string, unknown>[];
  do {
    unstamped = await query(`SELECT id FROM ${table} WHERE seq IS NULL ORDER BY id LIMIT 5`);
    if (unstamped.length > 0) await sleep(200);
  } while (unstamped.length > 0 && performance.now() < deadline);
  const violations: Violations = unstamped.map((row) => `pet ${Number(row.id)} stored but not in the feed ${STAMPED_WITHIN_MS} ms later`);
  const seqs = (await query(`SELECT seq FROM ${table} WHERE seq IS NOT NULL ORDER BY seq`)).map((row) => Number(row.seq));
  seqs.forEach((seq, i) => {
    const previous = i === 0 ? 0 : seqs[i - 1];
    if (seq !== previous + 1) violations.push(`seq ${seq} follows ${previous}: ${seq === previous ? 'repeated' : 'a gap'}`);
  });
  const [{ head }] = await query(`SELECT head FROM ${feedTable}`);
  if (Number(head) !== seqs.length) violations.push(`the feed's head is ${Number(head)} but it holds ${seqs.length} events`);
  return { violations, events: seqs.length };
}
