import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningSystem } from '../bench.runner';
import type { ScenarioContext } from '../scenarios';
import { AB_MARK } from './replace-export';

/** A started service, with what its probes need. */
export interface ProbeTarget {
  system: RunningSystem;
  /** Origin of its metrics listener (METRICS_PORT), e.g. `http://127.0.0.1:40123`. */
  metricsUrl: string;
  context: ScenarioContext;
}

/** Tells from outside whether one feature is on in a running service. */
export interface FeatureProbe {
  /** What the probe looks for when the feature is on. */
  sign: string;
  /**
   * @returns whether the feature is on.
   * @throws when the answer is neither what the feature on nor what it off would give (a broken service or probe).
   */
  isOn: (target: ProbeTarget) => Promise<boolean>;
}

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

async function send(target: ProbeTarget, path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(target.system.url + path, {
    ...init,
    headers: { authorization: `Bearer ${target.context.apiKey}`, ...(init.body !== undefined && { 'content-type': 'application/json' }), ...init.headers },
  });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

function expectStatus(answer: Answer, statuses: number[], what: string): void {
  if (!statuses.includes(answer.status)) throw new Error(`probe ${what}: answered ${answer.status} ${answer.body.slice(0, 300)}`);
}

const listOne = async (target: ProbeTarget) => {
  const answer = await send(target, '/v1/pets?limit=1');
  expectStatus(answer, [200], 'GET /v1/pets?limit=1');
  return answer;
};

const graphql = (target: ProbeTarget, query: string) => send(target, '/graphql', { method: 'POST', body: JSON.stringify({ query }) });

/** Whether a line of the process's standard output is the request log line of request `id`. */
const loggedCompletion = (target: ProbeTarget, id: string) =>
  target.system
    .output()
    .stdout.split('\n')
    .some((line) => line.includes(id) && line.includes('request completed'));

/** Whether a line of the process's standard error holds `[bench A/B] <text>`, written by a preload (replace-export.ts). */
const announced = (target: ProbeTarget, text: string) => target.system.output().stderr.includes(`${AB_MARK} ${text}`);

/** The probes, one per feature the A/B switches off (bench/README.md "Per-request cost"). */
export const FEATURE_PROBES = {
  requestLog: {
    sign: 'a "request completed" line with the request id on standard output',
    async isOn(target) {
      const id = `ab-probe-${randomUUID()}`;
      const answer = await send(target, '/v1/pets?limit=1', { headers: { 'x-request-id': id } });
      expectStatus(answer, [200], 'request log');
      // pino writes synchronously, but the pipe's data reaches the bench a moment later.
      for (let waited = 0; waited < 1000; waited += 50) {
        if (loggedCompletion(target, id)) return true;
        await sleep(50);
      }
      return false;
    },
  },
  metrics: {
    sign: 'petstore_http_request_duration_seconds counts on /metrics after a request',
    async isOn(target) {
      await listOne(target);
      const response = await fetch(`${target.metricsUrl}/metrics`);
      const text = await response.text();
      if (response.status !== 200) throw new Error(`probe metrics: /metrics answered ${response.status}`);
      return /^petstore_http_request_duration_seconds_count\{/m.test(text);
    },
  },
  rateLimit: {
    sign: 'a RateLimit header on an answer',
    async isOn(target) {
      return (await listOne(target)).headers.has('ratelimit');
    },
  },
  apiKeyCheck: {
    sign: '401 for a well-formed key that is in no database',
    async isOn(target) {
      const answer = await send(target, '/v1/pets?limit=1', { headers: { authorization: `Bearer ${target.context.badKey}` } });
      expectStatus(answer, [200, 401], 'API key check');
      return answer.status === 401;
    },
  },
  securityHeaders: {
    sign: 'X-Content-Type-Options: nosniff',
    async isOn(target) {
      return (await listOne(target)).headers.get('x-content-type-options') === 'nosniff';
    },
  },
  jsonNewline: {
    sign: 'a JSON body ending in a newline',
    async isOn(target) {
      return (await listOne(target)).body.endsWith('\n');
    },
  },
  validation: {
    sign: '400 for GET /v1/pets?limit=101 (the maximum is 100)',
    async isOn(target) {
      const answer = await send(target, '/v1/pets?limit=101');
      expectStatus(answer, [200, 400], 'validation');
      if (answer.status === 200 && (JSON.parse(answer.body) as unknown[]).length !== 101)
        throw new Error('probe validation: limit=101 accepted, but not 101 pets');
      return answer.status === 400;
    },
  },
  databaseDeadline: {
    sign: "no line of the deadline preload's replacement on standard error after a database read",
    async isOn(target) {
      await listOne(target);
      return !announced(target, 'withinDeadline replaced');
    },
  },
  cursorHash: {
    sign: 'a next-page cursor 8 bytes longer than its payload `1.<status>.<afterId>` (the SHA-256 checksum); either way, it gives the next page',
    async isOn(target) {
      const first = await listOne(target);
      const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')?.[1];
      const cursor = next && new URL(next, target.system.url).searchParams.get('after');
      if (!next || !cursor) throw new Error(`probe cursor hash: no next-page link in ${first.headers.get('link')}`);
      expectStatus(await send(target, next), [200], `cursor hash: the next page ${next}`);
      return !/^1\.[a-z]*\.\d+$/.test(Buffer.from(cursor, 'base64url').toString('latin1'));
    },
  },
  apolloPlugins: {
    sign: '200 for a GraphQL document that fails validation, in legacy application/json (legacyJsonStatusPlugin); Apollo alone answers 400',
    async isOn(target) {
      const answer = await graphql(target, '{ noSuchField }');
      expectStatus(answer, [200, 400], 'Apollo plugins');
      return answer.status === 200;
    },
  },
  costLimitPlugin: {
    sign: '`extensions.cost` in a GraphQL answer',
    async isOn(target) {
      const answer = await graphql(target, '{ pets(limit: 1) { id } }');
      expectStatus(answer, [200], 'cost-limit plugin');
      return (JSON.parse(answer.body) as { extensions?: { cost?: unknown } }).extensions?.cost !== undefined;
    },
  },
  apolloFastify: {
    sign: 'no line of the direct handler on standard error after a GraphQL request',
    async isOn(target) {
      expectStatus(await graphql(target, '{ pets(limit: 1) { id } }'), [200], 'Apollo Fastify integration');
      return !announced(target, 'Apollo called directly');
    },
  },
} satisfies Record<string, FeatureProbe>;

/** One of {@link FEATURE_PROBES}. */
export type Feature = keyof typeof FEATURE_PROBES;

/** Every feature probed, in the order of {@link FEATURE_PROBES}. */
export const FEATURES = Object.keys(FEATURE_PROBES) as Feature[];

/**
 * Runs every probe on a started service and checks that exactly the features in `off` are off.
 *
 * @param label - names the system in the error, e.g. `without the metrics`.
 * @throws naming each feature found in the wrong state, with what its probe looks for.
 */
export async function checkFeatures(target: ProbeTarget, off: readonly Feature[], label: string): Promise<void> {
  const wrong: string[] = [];
  for (const feature of FEATURES) {
    const probe: FeatureProbe = FEATURE_PROBES[feature];
    const on = await probe.isOn(target);
    if (on === off.includes(feature)) wrong.push(`${feature} is ${on ? 'on' : 'off'} (on: ${probe.sign})`);
  }
  if (wrong.length > 0) throw new Error(`A/B probe failed for the service ${label}: ${wrong.join('; ')}`);
}
