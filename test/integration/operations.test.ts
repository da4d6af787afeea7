import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../../src/database/open-database';
import { buildMetricsServer } from '../../src/observability/metrics.server';
import { type Metrics, createMetrics } from '../../src/observability/metrics.registry';
import { DeprecationTracker } from '../../src/observability/deprecation.tracker';
import { createLogger } from '../../src/observability/logger';
import { ServiceState } from '../../src/observability/service-state';
import { countStatements } from '../helpers/statement-counter';
import { type TestApp, createPet, graphql, request, startTestApp } from '../helpers/test-app';
import { createTestDatabase, testOnMysql } from '../helpers/test-database';

/** Observing the service (docs/operations.md): request ids, log lines, metrics, health. */
describe('operations', () => {
  let t: TestApp;
  let metrics: Metrics;
  const state = new ServiceState();
  const lines: Array<Record<string, any>> = [];

  beforeAll(async () => {
    metrics = createMetrics();
    t = await startTestApp({
      env: { LOG_LEVEL: 'info', RATE_LIMIT_MAX: '1000', RATE_LIMIT_UNAUTHENTICATED_MAX: '2' },
      observe: { metrics, state, logger: createLogger('info', { write: (line) => void lines.push(JSON.parse(line)) }) },
    });
  });
  afterAll(() => t.close());
  beforeEach(() => {
    lines.length = 0;
    state.draining = false;
  });

  async function scrape(): Promise<string> {
    const server = await buildMetricsServer(metrics);
    try {
      const response = await server.inject({ method: 'GET', url: '/metrics' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/plain; version=0.0.4/);
      return response.body;
    } finally {
      await server.close();
    }
  }

  const completed = () => lines.filter((line) => line.msg === 'request completed');

  describe('X-Request-Id', () => {
    test('when the client sends a safe one, then it is returned and logged', async () => {
      const response = await request(t, 'GET', '/v1/pets', { headers: { 'x-request-id': 'trace-42.a:b' } });
      expect(response.headers.get('x-request-id')).toBe('trace-42.a:b');
      expect(completed()).toEqual([expect.objectContaining({ requestId: 'trace-42.a:b' })]);
    });

    test('when the client sends none, then a UUID is made, returned and logged', async () => {
      const response = await request(t, 'GET', '/v1/pets');
      const id = response.headers.get('x-request-id');
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(completed()[0].requestId).toBe(id);
    });

    test.each([['with spaces'], ['x'.repeat(129)], ['new\\nline'], ['<script>']])('when the client sends %p, then it is replaced', async (sent) => {
      const response = await request(t, 'GET', '/v1/pets', { headers: { 'x-request-id': sent } });
      expect(response.headers.get('x-request-id')).not.toBe(sent);
      expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });

    test('when a request fails, then its error answer carries the id too', async () => {
      const response = await request(t, 'GET', '/v1/pets', { apiKey: null, headers: { 'x-request-id': 'failing-1' } });
      expect(response.status).toBe(401);
      expect(response.headers.get('x-request-id')).toBe('failing-1');
    });
  });

  describe('log lines', () => {
    test('when a REST request is served, then exactly one line says method, route, status, duration, request id and key id, never the key', async () => {
      const pet = await createPet(t);
      expect(completed()).toEqual([
        expect.objectContaining({
          level: 30,
          method: 'POST',
          route: '/v1/pets',
          status: 201,
          durationMs: expect.any(Number),
          requestId: expect.any(String),
          apiKeyId: expect.any(Number),
        }),
      ]);
      lines.length = 0;
      await request(t, 'GET', `/v1/pets/${pet.id}`);
      expect(completed()).toEqual([expect.objectContaining({ method: 'GET', route: '/v1/pets/:petId', status: 200 })]);
      expect(lines.filter((line) => line.msg === 'incoming request')).toEqual([]);
      expect(JSON.stringify(lines)).not.toContain(t.apiKey.slice(4, 40));
    });

    test('when a GraphQL operation is served, then its line carries the operation name and root fields', async () => {
      const response = await request(t, 'POST', '/graphql', { body: { query: 'query ListForHome { pets(limit: 1) { id } }', operationName: 'ListForHome' } });
      expect(response.status).toBe(200);
      expect(completed()).toEqual([
        expect.objectContaining({ route: '/graphql', status: 200, operation: 'query pets', operationName: 'ListForHome', apiKeyId: expect.any(Number) }),
      ]);
    });

    test('when a request has no key, then the line has apiKeyId null', async () => {
      await request(t, 'GET', '/v1/pets', { apiKey: null });
      expect(completed()).toEqual([expect.objectContaining({ status: 401, apiKeyId: null })]);
    });
  });

  describe('health', () => {
    test('when /healthz and /readyz are asked without a key, more often than the unauthenticated rate limit, then both answer 200 every time', async () => {
      for (let i = 0; i < 5; i++) {
        for (const path of ['/healthz', '/readyz']) {
          const response = await request(t, 'GET', path, { apiKey: null });
          const body = path === '/readyz' ? { status: 'ok', nodes: [{ name: 'primary', role: 'primary', ready: true, state: 'ok' }] } : { status: 'ok' };
          expect({ path, status: response.status, body: response.body }).toEqual({ path, status: 200, body });
          expect(response.headers.get('ratelimit')).toBeNull();
        }
      }
    });

    test('when /readyz is probed 50 times at once and again within the second, then the database is asked once', async () => {
      await sleep(1100); // past any result cached by earlier probes
      const statements = countStatements(t.dataSource);
      const first = await Promise.all(Array.from({ length: 50 }, () => request(t, 'GET', '/readyz', { apiKey: null })));
      const again = await Promise.all(Array.from({ length: 50 }, () => request(t, 'GET', '/readyz', { apiKey: null })));
      expect([...first, ...again].map((answer) => answer.status)).toEqual(Array(100).fill(200));
      expect(statements.count(/^SELECT 1$/)).toBe(1);
    });

    test('when the service is draining, then /readyz is 503 in the Error shape, /healthz stays 200, and answers keep their connection while the server still accepts', async () => {
      state.draining = true;
      const ready = await request(t, 'GET', '/readyz', { apiKey: null });
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({
        code: 'SERVICE_UNAVAILABLE',
        message: 'Shutting down.',
        status: 503,
        nodes: [expect.objectContaining({ name: 'primary' })],
      });
      expect(ready.headers.get('connection')).toBe('keep-alive');
      expect((await request(t, 'GET', '/healthz', { apiKey: null })).status).toBe(200);
      const served = await request(t, 'GET', '/v1/pets');
      expect(served.status).toBe(200);
      expect(served.headers.get('connection')).toBe('keep-alive');
    });
  });

  describe('metrics', () => {
    test('when requests were served, then the duration histogram has them by surface, route or GraphQL operation, method and status', async () => {
      await request(t, 'GET', '/v1/pets?limit=1');
      await request(t, 'GET', '/v1/pets', { apiKey: null });
      await graphql(t, 'mutation { createPet(input: { name: "Mo", categoryId: 2 }) { id } }');
      const text = await scrape();
      expect(text).toMatch(/petstore_http_request_duration_seconds_count\{surface="rest",route="\/v1\/pets",method="GET",status="200"\} [1-9]/);
      expect(text).toMatch(/petstore_http_request_duration_seconds_count\{surface="rest",route="\/v1\/pets",method="GET",status="401"\} [1-9]/);
      expect(text).toMatch(/petstore_http_request_duration_seconds_count\{surface="graphql",route="mutation createPet",method="POST",status="200"\} [1-9]/);
      expect(text).toMatch(/^process_resident_memory_bytes \d+/m);
      expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    });

    /** The samples of `name` in `text`, each with its labels (whatever their order) and value. */
    function samples(text: string, name: string): Array<{ labels: Record<string, string>; value: number }> {
      return [...text.matchAll(new RegExp(`^${name}(?:\\{(.*)\\})? (\\S+)$`, 'gm'))].map(([, labels = '', value]) => ({
        labels: Object.fromEntries([...labels.matchAll(/(\w+)="((?:[^"\\\\]|\\\\.)*)"/g)].map(([, key, text]) => [key, text])),
        value: Number(value),
      }));
    }

    test('when requests were served, then http_server_request_duration_seconds has them by semconv method, route template and status, the GraphQL operation apart, in the semconv buckets', async () => {
      const pet = await createPet(t);
      await request(t, 'GET', `/v1/pets/${pet.id}`);
      await graphql(t, 'query Named { pets(limit: 1) { id } }');
      await request(t, 'GET', '/no/such/route', { apiKey: null });
      const text = await scrape();
      expect(text).toContain('# TYPE http_server_request_duration_seconds histogram');
      const counts = samples(text, 'http_server_request_duration_seconds_count');
      expect(counts).toEqual(
        expect.arrayContaining([
          { labels: { http_request_method: 'POST', http_route: '/v1/pets', http_response_status_code: '201' }, value: expect.any(Number) },
          { labels: { http_request_method: 'GET', http_route: '/v1/pets/:petId', http_response_status_code: '200' }, value: expect.any(Number) },
          {
            labels: { http_request_method: 'POST', http_route: '/graphql', http_response_status_code: '200', graphql_operation: 'query pets' },
            value: expect.any(Number),
          },
          // No route matched: no http_route (semconv), so unknown paths add no series.
          { labels: { http_request_method: 'GET', http_response_status_code: '404' }, value: expect.any(Number) },
        ]),
      );
      for (const { labels } of counts)
        expect(Object.keys(labels).every((key) => ['http_request_method', 'http_route', 'http_response_status_code', 'graphql_operation'].includes(key))).toBe(
          true,
        );
      // The client's operation name (Named) is never a label: it is the client's to choose, unbounded.
      expect(text).not.toContain('Named');
      const buckets = samples(text, 'http_server_request_duration_seconds_bucket')
        .filter(({ labels }) => labels.http_route === '/v1/pets/:petId' && labels.http_response_status_code === '200')
        .map(({ labels }) => labels.le);
      expect(buckets).toEqual(['0.005', '0.01', '0.025', '0.05', '0.075', '0.1', '0.25', '0.5', '0.75', '1', '2.5', '5', '7.5', '10', '+Inf']);
    });

    test('when an unknown method is sent, then it is counted as _OTHER', async () => {
      const response = await fetch(`${t.url}/v1/pets`, { method: 'PROPFIND' });
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(samples(await scrape(), 'http_server_request_duration_seconds_count').map(({ labels }) => labels.http_request_method)).toContain('_OTHER');
    });

    test('when scraped, then the old duration histogram is still there, its help saying it is deprecated', async () => {
      await request(t, 'GET', '/v1/pets');
      const text = await scrape();
      expect(text).toMatch(
        /^# HELP petstore_http_request_duration_seconds Deprecated: use http_server_request_duration_seconds; removed in the next release\./m,
      );
      expect(text).toMatch(/^petstore_http_request_duration_seconds_bucket\{le="0.001",surface="rest",route="\/v1\/pets",method="GET",status="200"\} /m);
    });

    test('when scraped, then petstore_build_info is 1 with the package version and the Node.js version', async () => {
      const { version } = JSON.parse(readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
      expect(samples(await scrape(), 'petstore_build_info')).toEqual([{ labels: { version, node_version: process.version }, value: 1 }]);
    });

    test('when no REDIS_URL is set, then petstore_redis_up is absent, not a 0 that reads as an outage', async () => {
      expect(await scrape()).not.toMatch(/petstore_redis_up/);
    });

    testOnMysql('when on MySQL, then the pool gauge reports open, idle and waiting connections and the limit', async () => {
      await request(t, 'GET', '/v1/pets');
      const text = await scrape();
      expect(text).toMatch(/petstore_db_pool_connections\{node="primary",state="limit"\} 10/);
      expect(text).toMatch(/petstore_db_pool_connections\{node="primary",state="total"\} [1-9]/);
      expect(text).toMatch(/petstore_db_pool_connections\{node="primary",state="idle"\} \d+/);
      expect(text).toMatch(/petstore_db_pool_connections\{node="primary",state="waiting"\} 0/);
    });

    test('when getPet and Query.pet are called, then each call is counted for the calling key and logged once that day', async () => {
      const pet = await createPet(t);
      const keyId = (await t.apiKeys.authentication.findActive(t.apiKey))!.id;
      const before = Number(
        (await scrape()).match(new RegExp(`petstore_deprecated_calls_total\\{operation="getPet",api_key_id="${keyId}"\\} (\\d+)`))?.[1] ?? 0,
      );
      lines.length = 0;
      await request(t, 'GET', `/v1/pets/${pet.id}`);
      await graphql(t, `{ pet(id: "${pet.id}") { id } }`);
      await request(t, 'GET', '/v1/pets/999999');
      expect(await scrape()).toContain(`petstore_deprecated_calls_total{operation="getPet",api_key_id="${keyId}"} ${before + 3}`);
      // Earlier tests of this file may already have logged this key today: at most one line, never three.
      expect(lines.filter((line) => line.msg === 'deprecated operation called').length).toBeLessThanOrEqual(1);
    });
  });
});

describe('database log lines', () => {
  testOnMysql(
    'when a statement is slower than 500 ms, then one JSON line at warn says so, with its duration and without its parameters, and nothing else is printed',
    async () => {
      const { database, drop } = await createTestDatabase();
      const lines: Array<Record<string, any>> = [];
      const opened = await openDatabase(database, { log: createLogger('info', { write: (line) => void lines.push(JSON.parse(line)) }) });
      const printed = jest.spyOn(console, 'log');
      try {
        await opened.writer.query('SELECT SLEEP(?) AS slept', [0.6]);
        const slow = lines.filter((line) => line.msg === 'slow database query');
        expect(slow).toEqual([
          expect.objectContaining({ level: 40, component: 'database', query: 'SELECT SLEEP(?) AS slept', durationMs: expect.any(Number) }),
        ]);
        expect(slow[0].durationMs).toBeGreaterThanOrEqual(500);
        expect(JSON.stringify(slow[0])).not.toContain('0.6');
        expect(printed).not.toHaveBeenCalled();
      } finally {
        printed.mockRestore();
        await opened.close();
        await drop();
      }
    },
  );
});

describe('DeprecationTracker', () => {
  test('when a key calls many times over two days, then every call is counted and one line is logged per key per day', () => {
    const counted: Array<[string, number]> = [];
    const logged: unknown[] = [];
    let day = '2026-11-22';
    const tracker = new DeprecationTracker(
      { countDeprecatedCall: (operation, id) => void counted.push([operation, id]) },
      { warn: (line: unknown) => void logged.push(line) },
      () => day,
    );
    for (let i = 0; i < 3; i++) tracker.record('getPet', 7);
    tracker.record('getPet', 8);
    day = '2026-11-23';
    tracker.record('getPet', 7);
    tracker.record('getPet', 7);
    expect(counted).toHaveLength(6);
    expect(logged).toEqual([
      { operation: 'getPet', apiKeyId: 7 },
      { operation: 'getPet', apiKeyId: 8 },
      { operation: 'getPet', apiKeyId: 7 },
    ]);
  });
});
