import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openEventStream } from '../helpers/event-stream-client';
import { type ReceivedSpan, OtlpReceiver } from '../helpers/otlp-receiver';
import { connectWithKey, subscribe } from '../helpers/subscription-client';
import { built, runNode, startBuiltServer } from '../helpers/processes';
import { describeOnMysql } from '../helpers/test-database';
import { TRACING_LIMITS } from '../../src/limits';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;

/** A preload that writes, as the process exits, every module it has loaded: how a test sees what a running server required. */
async function moduleListPreload(): Promise<{ execArgv: string[]; loaded: () => Promise<string[]> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'tracing-modules-'));
  const script = path.join(dir, 'record-modules.js');
  const list = path.join(dir, 'modules.json');
  await writeFile(script, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(list)}, JSON.stringify(Object.keys(require.cache))));\n`);
  return { execArgv: ['--require', script], loaded: async () => JSON.parse(await readFile(list, 'utf8')) as string[] };
}

/** The tracing packages among `modules`: the SDK, the exporters, the instrumentations. */
function tracingModules(modules: string[]): string[] {
  return modules.filter((file) => /node_modules\/(@opentelemetry\/(sdk-|exporter-|instrumentation)|@fastify\/otel)/.test(file));
}

/** Whether `span` descends from `ancestor` within `spans`. */
function descendsFrom(span: ReceivedSpan, ancestor: ReceivedSpan, spans: ReceivedSpan[]): boolean {
  const byId = new Map(spans.filter((s) => s.traceId === span.traceId).map((s) => [s.spanId, s]));
  for (let parent = byId.get(span.parentSpanId); parent; parent = byId.get(parent.parentSpanId)) {
    if (parent.spanId === ancestor.spanId) return true;
  }
  return false;
}

const isSql = (span: ReceivedSpan) => span.kind === CLIENT && (span.attributes['db.system'] ?? span.attributes['db.system.name']) === 'mysql';
const isRedis = (span: ReceivedSpan) => span.kind === CLIENT && (span.attributes['db.system'] ?? span.attributes['db.system.name']) === 'redis';
const statementOf = (span: ReceivedSpan): string => {
  const text = span.attributes['db.statement'] ?? span.attributes['db.query.text'];
  return typeof text === 'string' ? text : '';
};

/** W3C trace context's `traceparent` header of a new sampled trace. */
function newTraceparent(): { header: string; traceId: string; parentId: string } {
  const traceId = randomBytes(16).toString('hex');
  const parentId = randomBytes(8).toString('hex');
  return { header: `00-${traceId}-${parentId}-01`, traceId, parentId };
}

describeOnMysql('tracing with OTEL_EXPORTER_OTLP_ENDPOINT set, over http/json (docs/operations.md "Tracing")', () => {
  let receiver: OtlpReceiver;
  let server: Awaited<ReturnType<typeof startBuiltServer>>;
  let modules: Awaited<ReturnType<typeof moduleListPreload>>;
  const call = (method: string, url: string, headers: Record<string, string> = {}, body?: unknown) =>
    fetch(`${server.url}${url}`, {
      method,
      headers: { Authorization: `Bearer ${server.apiKey}`, ...(body !== undefined && { 'Content-Type': 'application/json' }), ...headers },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    receiver = await OtlpReceiver.start();
    modules = await moduleListPreload();
    const namespace = `tracing-${randomUUID()}:`;
    server = await startBuiltServer('tracing-', {
      execArgv: modules.execArgv,
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
        REDIS_URL,
        REDIS_NAMESPACE: namespace,
        LOG_LEVEL: 'info',
      },
    });
  }, 60_000);

  let stopped = false;
  afterAll(async () => {
    if (!stopped) await server?.stop();
    await receiver?.close();
  });

  test('when GET /v1/pets carries a traceparent, then its trace is continued and returned, with the statements under the server span', async () => {
    const incoming = newTraceparent();
    const response = await call('GET', '/v1/pets?limit=2', { traceparent: incoming.header });
    expect(response.status).toBe(200);
    const returned = response.headers.get('traceparent') ?? '';
    expect(returned).toMatch(new RegExp(`^00-${incoming.traceId}-[0-9a-f]{16}-01$`));
    const serverSpanId = returned.split('-')[2];

    const { serverSpan, spans } = await receiver.waitFor((all) => {
      const found = all.find((span) => span.spanId === serverSpanId);
      return found && all.some((span) => isSql(span) && descendsFrom(span, found, all)) ? { serverSpan: found, spans: all } : undefined;
    });
    expect(serverSpan).toMatchObject({ traceId: incoming.traceId, parentSpanId: incoming.parentId, name: 'GET /v1/pets', kind: SERVER });
    expect(serverSpan.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.route': '/v1/pets', 'http.response.status_code': 200 });
    const statements = spans.filter((span) => isSql(span) && descendsFrom(span, serverSpan, spans));
    expect(statements.some((span) => /FROM `pet`/.test(statementOf(span)))).toBe(true);
    // The rate limit's Redis commands are the request's too.
    expect(spans.some((span) => isRedis(span) && descendsFrom(span, serverSpan, spans))).toBe(true);
    // Values are masked: no statement carries the API key's hash or any quoted value.
    for (const span of statements) expect(statementOf(span)).not.toMatch(/'[^']+'/);

    // Probes are not traced: no server span, so no traceparent.
    const probe = await fetch(`${server.url}/healthz`, { headers: { traceparent: incoming.header } });
    expect(probe.status).toBe(200);
    expect(probe.headers.get('traceparent')).toBeNull();
  });

  test('when a GraphQL query runs, then its operation span sits between the server span and its statements', async () => {
    const response = await call('POST', '/graphql', {}, { query: 'query PetsPage { pets(limit: 2) { id name } }', operationName: 'PetsPage' });
    expect(response.status).toBe(200);
    const traceId = (response.headers.get('traceparent') ?? '').split('-')[1];
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    const { serverSpan, operationSpan, spans } = await receiver.waitFor((all) => {
      const server = all.find((span) => span.traceId === traceId && span.kind === SERVER);
      const operation = all.find((span) => span.traceId === traceId && span.name === 'query PetsPage');
      return server && operation && all.some((span) => isSql(span) && descendsFrom(span, operation, all))
        ? { serverSpan: server, operationSpan: operation, spans: all }
        : undefined;
    });
    expect(serverSpan.name).toBe('POST /graphql');
    expect(serverSpan.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/graphql', 'http.response.status_code': 200 });
    expect(descendsFrom(operationSpan, serverSpan, spans)).toBe(true);
    expect(operationSpan.attributes).toEqual({ 'graphql.operation.type': 'query', 'graphql.operation.name': 'PetsPage' });
  });

  test('when a pet is created with an Idempotency-Key, then the idempotency record and the insert are statements of its request, and its log lines carry its trace', async () => {
    const response = await call('POST', '/v1/pets', { 'Idempotency-Key': randomUUID() }, { name: 'Traced', categoryId: 1, status: 'available' });
    expect(response.status).toBe(201);
    const [, traceId, serverSpanId] = (response.headers.get('traceparent') ?? '').split('-');
    const { serverSpan, spans } = await receiver.waitFor((all) => {
      const found = all.find((span) => span.spanId === serverSpanId);
      const statements = found ? all.filter((span) => isSql(span) && descendsFrom(span, found, all)).map(statementOf) : [];
      return found && statements.some((text) => /idempotency_key/.test(text)) && statements.some((text) => /INSERT INTO `pet`/.test(text))
        ? { serverSpan: found, spans: all }
        : undefined;
    });
    expect(serverSpan).toMatchObject({ traceId, name: 'POST /v1/pets', kind: SERVER, parentSpanId: '' });
    expect(serverSpan.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/v1/pets', 'http.response.status_code': 201 });

    // Every log line of the request: its request id, its trace id, and a span of that trace.
    const requestId = response.headers.get('x-request-id');
    const traceSpanIds = new Set(spans.filter((span) => span.traceId === traceId).map((span) => span.spanId));
    const lines = () =>
      server.server.output.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line.requestId === requestId);
    const deadline = Date.now() + 5000;
    while (lines().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines().length).toBeGreaterThan(0);
    for (const line of lines()) {
      expect(line.trace_id).toBe(traceId);
      expect(traceSpanIds.has(String(line.span_id))).toBe(true);
    }
  });

  test('when events are delivered to a WebSocket subscription and an event stream, then each delivery links to its subscribe or stream span', async () => {
    const connection = await connectWithKey(server);
    const stream = await openEventStream(server);
    try {
      const created = subscribe(connection.client, 'subscription NewPets { petCreated { id } }');
      const streamTrace = (stream.response.headers.traceparent as string).split('-')[1];
      // The subscribe span ends once the subscription is set up: wait for it before the event it should see.
      const subscribeSpan = await receiver.waitFor((all) => all.find((span) => span.name === 'subscription NewPets'));
      expect(subscribeSpan).toMatchObject({ kind: SERVER, parentSpanId: '' });
      expect(subscribeSpan.attributes).toEqual({ 'graphql.operation.type': 'subscription', 'graphql.operation.name': 'NewPets' });
      expect((await call('POST', '/v1/pets', {}, { name: 'Linked', categoryId: 1, status: 'available' })).status).toBe(201);
      await created.pets(1);
      const { wsDelivery, sseDelivery } = await receiver.waitFor((all) => {
        const deliveries = all.filter((span) => span.kind === PRODUCER);
        const ws = deliveries.find((span) => span.name === 'send petCreated' && span.links.some((link) => link.spanId === subscribeSpan.spanId));
        const sse = deliveries.find((span) => span.links.some((link) => link.traceId === streamTrace));
        return ws && sse ? { wsDelivery: ws, sseDelivery: sse } : undefined;
      });
      // Each delivery is a trace of its own, linked to its subscription's.
      expect(wsDelivery.parentSpanId).toBe('');
      expect(wsDelivery.traceId).not.toBe(subscribeSpan.traceId);
      expect(sseDelivery.parentSpanId).toBe('');
      expect(sseDelivery.name).toBe(`send ${stream.frames.find((frame) => frame.event !== undefined)?.event}`);
    } finally {
      stream.close();
      await connection.client.dispose();
    }
  });

  test('when the server runs traced, then no statement is a trace of its own, and the SDK and the instrumentations are loaded (the control of the test below)', async () => {
    // The change feed's ticks ran statements all along: none of them is a trace of its own.
    expect(receiver.spans().filter((span) => span.kind === CLIENT && span.parentSpanId === '')).toEqual([]);
    stopped = true;
    await server.stop();
    expect(tracingModules(await modules.loaded()).length).toBeGreaterThan(0);
  });
});

describeOnMysql('tracing over http/protobuf', () => {
  test('when OTEL_EXPORTER_OTLP_PROTOCOL is http/protobuf, then spans arrive as protobuf, the server span named after its route', async () => {
    const receiver = await OtlpReceiver.start();
    const server = await startBuiltServer('tracing-proto-', {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
    try {
      const incoming = newTraceparent();
      const response = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${server.apiKey}`, traceparent: incoming.header } });
      expect(response.status).toBe(200);
      // Protobuf keeps ids as raw bytes and strings as UTF-8: the trace's id and the span's name are in the body.
      const traceBytes = Buffer.from(incoming.traceId, 'hex');
      const body = await receiver.waitFor(() => receiver.exports.find(({ body }) => body.includes(traceBytes) && body.includes('GET /v1/pets')));
      expect(body.contentType).toBe('application/x-protobuf');
    } finally {
      await server.stop();
      await receiver.close();
    }
  }, 60_000);
});

describeOnMysql('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  test('when the server runs and serves, then no tracing module is ever loaded and no traceparent is returned', async () => {
    const modules = await moduleListPreload();
    const server = await startBuiltServer('tracing-off-', { execArgv: modules.execArgv, env: { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' } });
    try {
      const response = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${server.apiKey}`, traceparent: newTraceparent().header } });
      expect(response.status).toBe(200);
      expect(response.headers.get('traceparent')).toBeNull();
    } finally {
      await server.stop();
    }
    const loaded = await modules.loaded();
    expect(loaded.some((file) => file.includes('node_modules/fastify/'))).toBe(true);
    expect(tracingModules(loaded)).toEqual([]);
  }, 60_000);
});

describe('tracing settings that cannot be honoured', () => {
  test.each([
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL: must be http/protobuf or http/json'],
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER: must be'],
    [{ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '10%' }, 'OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1'],
  ])('when tracing is on with %j, then the start stops with one line naming the variable', async (env, message) => {
    const cwd = await mkdtemp(path.join(tmpdir(), 'tracing-bad-'));
    const result = await runNode(built('src/main.js'), [], { cwd, env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', ...env } });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringContaining(message)]);
  });
});

describe('a collector that is away', () => {
  test('when the OTLP endpoint refuses connections, then requests are still served and traced, and the exit at SIGTERM is not held up', async () => {
    // The exporter would retry for 30 s: the exit must not wait for it.
    const server = await startBuiltServer('tracing-away-', {
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_EXPORTER_OTLP_TIMEOUT: '30000' },
    });
    try {
      for (let i = 0; i < 3; i++) {
        const response = await fetch(`${server.url}/v1/pets`, { headers: { Authorization: `Bearer ${server.apiKey}` } });
        expect(response.status).toBe(200);
        expect(response.headers.get('traceparent')).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
        // Past the batch delay, so the next request meets an export that failed.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      // The spans it could not send hold its exit TRACING_LIMITS.shutdownFlushMs at most, beside the rest of the shutdown (about 2 s).
      const stopping = performance.now();
      server.server.child.kill('SIGTERM');
      expect(await server.server.exited).toBe(0);
      expect(performance.now() - stopping).toBeLessThan(TRACING_LIMITS.shutdownFlushMs + 6000);
      await server.stop();
    }
  }, 60_000);
});
