import { SUBSCRIPTION_CLOSE } from '../../src/graphql/subscription-close.codes';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect as connectTcp } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from 'graphql-ws';
import { IsNull } from 'typeorm';
import WebSocket from 'ws';
import { ApiKey } from '../../src/auth/api-key.entity';
import { createLogger } from '../../src/observability/logger';
import { type Metrics, createMetrics } from '../../src/observability/metrics.registry';
import { exchangeRaw, parseRawResponse } from '../helpers/raw-http';
import { asEvent, connect, connectWithKey, metricValue, subscribe, untilActive, wsUrl } from '../helpers/subscription-client';
import { createPet, graphql, request, startTestApp, type TestApp } from '../helpers/test-app';
import { FOLLOWER_LIMITS, SUBSCRIPTION_LIMITS } from '../../src/limits';

/**
 * `Subscription.petCreated` over WebSocket (docs/subscriptions.md), with a real graphql-ws
 * client (`ws` as its WebSocket) against the real app on a real database.
 */

const PET_FIELDS = 'id name categoryId status';

describe('petCreated over WebSocket', () => {
  let t: TestApp;
  let metrics: Metrics;
  const clients: Client[] = [];
  const logLines: Array<Record<string, unknown>> = [];
  beforeAll(async () => {
    metrics = createMetrics();
    t = await startTestApp({ observe: { metrics, logger: createLogger('info', { write: (line) => void logLines.push(JSON.parse(line)) }) } });
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
    const deadline = Date.now() + 10_000;
    while ((await metricValue(metrics, 'petstore_websocket_connections')) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  });
  afterAll(() => t.close());

  /** A connected, authenticated client, disposed after the test. */
  async function client(key = t.apiKey): Promise<Client> {
    const { client } = await connectWithKey(t, key);
    clients.push(client);
    return client;
  }

  test('when pets are created over REST and over GraphQL, then a subscriber receives each once, after its commit, with all four fields', async () => {
    const c = await client();
    const all = subscribe(c, `subscription { petCreated { ${PET_FIELDS} } }`);
    await untilActive(metrics, 1);
    const viaRest = await createPet(t, { name: 'Rex', categoryId: 7, status: 'pending' });
    const viaGraphql = await graphql(t, `mutation { createPet(input: { name: "Tom", categoryId: 9007199254740991 }) { ${PET_FIELDS} } }`);
    expect(viaGraphql.status).toBe(200);
    const created = viaGraphql.body.data.createPet;
    expect(await all.pets(2)).toEqual([asEvent(viaRest), created]);
    // int64 exact: 2^53-1 travels as is.
    expect(created.categoryId).toBe(9007199254740991);
  });

  test('when status is given, then only pets created with that status arrive; a variable works as a literal does', async () => {
    const c = await client();
    const pending = subscribe(c, `subscription { petCreated(status: pending) { id status } }`);
    const sold = subscribe(c, `subscription($s: PetStatus) { petCreated(status: $s) { id status } }`, { s: 'sold' });
    await untilActive(metrics, 2);
    const available = await createPet(t, { status: 'available' });
    const p = await createPet(t, { status: 'pending' });
    const s = await createPet(t, { status: 'sold' });
    expect(await pending.pets(1)).toEqual([{ id: String(p.id), status: 'pending' }]);
    expect(await sold.pets(1)).toEqual([{ id: String(s.id), status: 'sold' }]);
    await createPet(t, { status: 'pending' }); // a later one: nothing else arrived in between
    expect((await pending.pets(2))[1]).not.toEqual({ id: String(available.id), status: 'available' });
    expect(pending.results).toHaveLength(2);
    expect(sold.results).toHaveLength(1);
  });

  test('when a create is refused or an Idempotency-Key is replayed, then no event is sent for it', async () => {
    const c = await client();
    const all = subscribe(c, `subscription { petCreated { id name } }`);
    await untilActive(metrics, 1);
    const key = { 'idempotency-key': `subs-${randomUUID()}` };
    const first = await request(t, 'POST', '/v1/pets', { body: { name: 'Once', categoryId: 1 }, headers: key });
    const replay = await request(t, 'POST', '/v1/pets', { body: { name: 'Once', categoryId: 1 }, headers: key });
    expect([first.status, replay.status, replay.body.id]).toEqual([201, 201, first.body.id]);
    const graphqlReplay = await request(t, 'POST', '/graphql', {
      body: { query: 'mutation { createPet(input: { name: "Once", categoryId: 1 }) { id } }' },
      headers: { 'idempotency-key': `subs-${randomUUID()}` },
    });
    expect(graphqlReplay.status).toBe(200);
    const gqlKey = { 'idempotency-key': `subs-${randomUUID()}` };
    const gqlFirst = await request(t, 'POST', '/graphql', {
      body: { query: 'mutation { createPet(input: { name: "G", categoryId: 1 }) { id } }' },
      headers: gqlKey,
    });
    const gqlAgain = await request(t, 'POST', '/graphql', {
      body: { query: 'mutation { createPet(input: { name: "G", categoryId: 1 }) { id } }' },
      headers: gqlKey,
    });
    expect(gqlAgain.body.data.createPet.id).toBe(gqlFirst.body.data.createPet.id);
    expect((await request(t, 'POST', '/v1/pets', { body: { name: ' ', categoryId: 1 } })).status).toBe(400);
    expect((await graphql(t, 'mutation { createPet(input: { name: "", categoryId: 1 }) { id } }')).body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    const marker = await createPet(t, { name: 'Marker' });
    expect(await all.pets(4)).toEqual([
      { id: String(first.body.id), name: 'Once' },
      { id: graphqlReplay.body.data.createPet.id, name: 'Once' },
      { id: gqlFirst.body.data.createPet.id, name: 'G' },
      { id: String(marker.id), name: 'Marker' },
    ]);
    expect(all.results).toHaveLength(4);
  });

  test('when events are delivered, then the metrics count open sockets, running subscriptions and delivered events', async () => {
    const before = await metricValue(metrics, 'petstore_subscription_events_total');
    const c = await client();
    const a = subscribe(c, `subscription { petCreated { id } }`);
    const b = subscribe(c, `subscription { petCreated { id } }`);
    await untilActive(metrics, 2);
    expect(await metricValue(metrics, 'petstore_websocket_connections')).toBe(1);
    expect(await metricValue(metrics, 'petstore_subscriptions_active')).toBe(2);
    await createPet(t);
    await Promise.all([a.pets(1), b.pets(1)]);
    expect((await metricValue(metrics, 'petstore_subscription_events_total')) - before).toBe(2);
    a.unsubscribe();
    const deadline = Date.now() + 5000;
    while ((await metricValue(metrics, 'petstore_subscriptions_active')) !== 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(await metricValue(metrics, 'petstore_subscriptions_active')).toBe(1);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^petstore_subscription_events_total\{subscription="petCreated"\} \d+$/m);
  });

  test('when a WebSocket closes, then one log line tells its key, close code and duration, and never the key itself', async () => {
    const { client, closed } = await connectWithKey(t);
    const apiKeyId = (await t.apiKeys.list()).find((key) => key.name === 'test')!.id;
    logLines.length = 0;
    await client.dispose();
    await closed;
    const deadline = Date.now() + 5000;
    while (!logLines.some((line) => line.msg === 'websocket closed') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(logLines.filter((line) => line.msg === 'websocket closed')).toEqual([
      expect.objectContaining({ level: 30, route: '/graphql', surface: 'websocket', apiKeyId, closeCode: 1000, durationMs: expect.any(Number) }),
    ]);
    expect(JSON.stringify(logLines)).not.toContain(t.apiKey);
  });

  describe('authentication in connection_init', () => {
    test.each<[string, (t: TestApp) => Record<string, unknown> | undefined]>([
      ['no payload', () => undefined],
      ['no Authorization', () => ({ other: 'x' })],
      ['a malformed key', () => ({ Authorization: 'Bearer pst_nope' })],
      ['an unknown well-formed key', () => ({ Authorization: `Bearer pst_${'A'.repeat(43)}${'B'.repeat(6)}` })],
      ['a key without Bearer', (app) => ({ Authorization: app.apiKey })],
      ['a key that is not a string', () => ({ Authorization: 42 })],
    ])('when the payload has %s, then the socket is closed with 4403 before any subscription runs', async (_case, params) => {
      const { client, closed } = connect(t, params(t));
      clients.push(client);
      const attempt = subscribe(client, `subscription { petCreated { id } }`);
      expect(await closed).toEqual({ code: 4403, reason: expect.stringMatching(/^Forbidden/) });
      await attempt.error();
      expect(await metricValue(metrics, 'petstore_subscriptions_active')).toBe(0);
    });

    test('when the header name is in another case (authorization, AUTHORIZATION), then the key is accepted', async () => {
      for (const name of ['authorization', 'AUTHORIZATION']) {
        const connection = connect(t, { [name]: `bearer ${t.apiKey}` });
        clients.push(connection.client);
        await connection.connected;
      }
    });

    test('when the key is revoked by another process, then its open sockets are closed with 4403 within API_KEY_CACHE_SECONDS', async () => {
      const short = await startTestApp({ env: { API_KEY_CACHE_SECONDS: '1' } });
      try {
        const { client, closed } = await connectWithKey(short);
        clients.push(client);
        const sub = subscribe(client, `subscription { petCreated { id } }`);
        await createPet(short); // the connection works
        // Revoked in the database only, as the CLI or another instance does: this process's cache still trusts the key.
        const revokedAt = Date.now();
        await short.dataSource.getRepository(ApiKey).update({ revokedAt: IsNull() }, { revokedAt: new Date() });
        const result = await closed;
        const elapsedMs = Date.now() - revokedAt;
        expect(result).toEqual(SUBSCRIPTION_CLOSE.revoked);
        expect(elapsedMs).toBeLessThanOrEqual(1000 + 500); // one period, plus the query
        await sub.error();
      } finally {
        await short.close();
      }
    });
  });

  describe('limits', () => {
    test(`when a connection opens more than ${SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection} subscriptions at once, then the next is refused with TOO_MANY_REQUESTS; completing one frees a place`, async () => {
      const c = await client();
      const running = Array.from({ length: SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection }, () => subscribe(c, `subscription { petCreated { id } }`));
      await untilActive(metrics, SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection);
      const refused = await subscribe(c, `subscription { petCreated { id } }`).error();
      expect(refused).toEqual([{ message: expect.stringMatching(/^Too many subscriptions on this connection/), extensions: { code: 'TOO_MANY_REQUESTS' } }]);
      running[0].unsubscribe();
      const deadline = Date.now() + 5000;
      while ((await metricValue(metrics, 'petstore_subscriptions_active')) >= SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const again = subscribe(c, `subscription { petCreated { id } }`);
      await untilActive(metrics, SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection);
      const pet = await createPet(t);
      expect(await again.pets(1)).toEqual([{ id: String(pet.id) }]);
    });

    test(`when one key opens more than ${FOLLOWER_LIMITS.maxStreamsPerKey} connections, then the next is closed with 4429; another key is not affected`, async () => {
      for (let i = 0; i < FOLLOWER_LIMITS.maxStreamsPerKey; i++) await client();
      const { client: extra, closed } = connect(t, { Authorization: `Bearer ${t.apiKey}` });
      clients.push(extra);
      expect(await closed).toEqual({ code: 4429, reason: expect.stringMatching(/^Too many open streams for this API key: at most 20 per instance/) });
      const other = (await t.apiKeys.create('other')).key;
      await client(other);
    });

    test('when the rate limit is spent, then a subscribe is refused with TOO_MANY_REQUESTS and a new connection is closed with 4429', async () => {
      // 3 requests: the connection (1) and two subscriptions (1 each, the price of petCreated).
      const limited = await startTestApp({ env: { RATE_LIMIT_MAX: '3' } });
      try {
        const { client } = await connectWithKey(limited);
        clients.push(client);
        subscribe(client, `subscription { petCreated { id } }`);
        subscribe(client, `subscription { petCreated { id } }`);
        const refused = await subscribe(client, `subscription { petCreated { id } }`).error();
        expect(refused).toEqual([
          {
            message: expect.stringMatching(/^Rate limit reached: retry in \d+ s\.$/),
            extensions: { code: 'TOO_MANY_REQUESTS', retryAfterSeconds: expect.any(Number) },
          },
        ]);
        const second = connect(limited, { Authorization: `Bearer ${limited.apiKey}` });
        clients.push(second.client);
        expect(await second.closed).toEqual({ code: 4429, reason: expect.stringMatching(/^Rate limit reached: retry in \d+ s\.$/) });
        // The HTTP surface sees the same counter.
        expect((await request(limited, 'GET', '/v1/pets')).status).toBe(429);
      } finally {
        await limited.close();
      }
    });

    const ALIASES_16 = `subscription { petCreated { ${Array.from({ length: 16 }, (_, i) => `a${i}: id`).join(' ')} } }`;
    const ONLY_SUBSCRIPTIONS = 'Only subscriptions are served over WebSocket: send queries and mutations to POST /graphql.';
    test('when an address keeps trying without a valid key, then it pays the unauthenticated limit: 4403 until it is spent, then 4429', async () => {
      const limited = await startTestApp({ env: { RATE_LIMIT_UNAUTHENTICATED_MAX: '2' } });
      try {
        const codes: number[] = [];
        for (const params of [{}, { Authorization: 'Bearer pst_nope' }, { Authorization: 'Bearer pst_nope' }]) {
          const attempt = connect(limited, params);
          clients.push(attempt.client);
          codes.push((await attempt.closed).code);
        }
        expect(codes).toEqual([4403, 4403, 4429]);
        // A key this process knows pays on its own account, not the address's.
        await connectWithKey(limited).then(({ client }) => clients.push(client));
      } finally {
        await limited.close();
      }
    });

    test.each<[string, string, string, string]>([
      [
        'more aliases than allowed',
        'GRAPHQL_VALIDATION_FAILED',
        'Aliases limit of 15 exceeded, found 16.',
        `subscription { petCreated { ${Array.from({ length: 16 }, (_, i) => `a${i}: id`).join(' ')} } }`,
      ],
      ['more aliases than allowed', 'GRAPHQL_VALIDATION_FAILED', 'Aliases limit of 15 exceeded, found 16.', ALIASES_16],
      [
        'more tokens than allowed',
        'GRAPHQL_PARSE_FAILED',
        'Syntax Error: Document contains more that 1000 tokens. Parsing aborted.',
        `subscription { petCreated { ${'id '.repeat(1000)}} }`,
      ],
      [
        'a price over the cost limit (300 spreads of 4 fields)',
        'GRAPHQL_VALIDATION_FAILED',
        'Query cost 1,200 exceeds the maximum of 1,000.',
        `subscription { petCreated { ...F } } fragment F on Pet { ${'...G '.repeat(300)}} fragment G on Pet { id name categoryId status }`,
      ],
      ['a syntax error', 'GRAPHQL_PARSE_FAILED', 'Syntax Error: Expected Name, found <EOF>.', 'subscription { petCreated { id }'],
      ['an unknown field', 'GRAPHQL_VALIDATION_FAILED', 'Cannot query field "owner" on type "Pet".', 'subscription { petCreated { owner } }'],
      [
        'an unknown status',
        'GRAPHQL_VALIDATION_FAILED',
        'Value "lost" does not exist in "PetStatus" enum.',
        'subscription { petCreated(status: lost) { id } }',
      ],
      [
        'two root fields',
        'GRAPHQL_VALIDATION_FAILED',
        'Anonymous Subscription must select only one top level field.',
        'subscription { a: petCreated { id } b: petCreated { id } }',
      ],
      ['a query', 'GRAPHQL_VALIDATION_FAILED', ONLY_SUBSCRIPTIONS, '{ pets { id } }'],
      ['a mutation', 'GRAPHQL_VALIDATION_FAILED', ONLY_SUBSCRIPTIONS, 'mutation { createPet(input: { name: "No", categoryId: 1 }) { id } }'],
    ])('when the document has %s, then the subscribe is refused with %s and nothing runs', async (_case, code, message, query) => {
      const c = await client();
      const error = await subscribe(c, query).error();
      expect(error).toEqual([expect.objectContaining({ message, extensions: { code } })]);
      expect(JSON.stringify(error)).not.toMatch(/stack|at .*\.ts/);
      expect(await metricValue(metrics, 'petstore_subscriptions_active')).toBe(0);
    });

    test('when a variable does not fit its type, then the subscribe is refused with BAD_USER_INPUT', async () => {
      const c = await client();
      const error = await subscribe(c, 'subscription($s: PetStatus) { petCreated(status: $s) { id } }', { s: 'lost' }).error();
      expect(error).toEqual([expect.objectContaining({ extensions: { code: 'BAD_USER_INPUT' } })]);
    });
  });

  describe('the upgrade', () => {
    /** Opens a raw WebSocket and resolves with the HTTP status of a refused upgrade, or 101. */
    const upgrade = (url: string, protocol?: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const socket = new WebSocket(url, protocol);
        socket.on('unexpected-response', (_request, response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        });
        socket.on('open', () => {
          socket.close();
          resolve({ status: 101, body: '' });
        });
        socket.on('error', (error) => (error.message.startsWith('Unexpected server response') ? undefined : reject(error)));
      });

    test('when a WebSocket upgrade asks for another path, then it is refused with 404 in the Error shape', async () => {
      for (const where of ['/v1/pets', '/graphql/x', '/']) {
        const { status, body } = await upgrade(`${t.url.replace(/^http/, 'ws')}${where}`, 'graphql-transport-ws');
        expect(status).toBe(404);
        expect(JSON.parse(body)).toEqual({ code: 'NOT_FOUND', message: expect.stringContaining('/graphql'), status: 404 });
      }
    });

    test('when a refused upgrade is never closed by its peer, then the server closes the connection itself after the close wait', async () => {
      // The peer never ends its side (it stays half open when the server ends its own).
      const socket = connectTcp({ port: Number(new URL(t.url).port), host: '127.0.0.1', allowHalfOpen: true });
      const reset = new Promise<string>((resolve) => socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message)));
      const answered = new Promise<void>((resolve) => socket.once('end', () => resolve()));
      socket.on('data', () => undefined);
      socket.write(
        `GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
      );
      await answered;
      await sleep(SUBSCRIPTION_LIMITS.closeHandshakeMs + 500);
      // A connection the server still held would take these bytes; a closed one answers the first with a reset, the next fails.
      socket.write('still here?');
      await sleep(200);
      socket.write('still here?');
      expect(await Promise.race([reset, sleep(2_000).then(() => 'still open')])).toMatch(/ECONNRESET|EPIPE/);
      socket.destroy();
    });

    test('when a plain HTTP request asks to upgrade to another protocol (curl --http2: Upgrade h2c), then it is answered over HTTP/1.1 as before', async () => {
      const pet = await createPet(t, { name: 'Plain' });
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const outgoing = httpRequest(`${t.url}/v1/pets/${pet.id}`, {
          headers: { authorization: `Bearer ${t.apiKey}`, connection: 'Upgrade, HTTP2-Settings', upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQCAAAAAAIAAAAA' },
        });
        outgoing.on('response', (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
        });
        outgoing.on('error', reject);
        outgoing.end();
      });
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toEqual(pet);
    });

    test('when the upgrade asks for /graphql with a query string, then it is accepted', async () => {
      expect((await upgrade(`${wsUrl(t)}?x=1`, 'graphql-transport-ws')).status).toBe(101);
    });

    const KEY = 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
    const HANDSHAKE = 'Host: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n';
    test.each<[string, number, string, string, Record<string, string>]>([
      ['no Sec-WebSocket-Key', 400, 'BAD_REQUEST', `GET /graphql HTTP/1.1\r\n${HANDSHAKE}Sec-WebSocket-Version: 13\r\n\r\n`, {}],
      ['the POST method', 405, 'METHOD_NOT_ALLOWED', `POST /graphql HTTP/1.1\r\n${HANDSHAKE}${KEY}Sec-WebSocket-Version: 13\r\n\r\n`, { allow: 'GET' }],
      [
        'Sec-WebSocket-Version: 99',
        400,
        'BAD_REQUEST',
        `GET /graphql HTTP/1.1\r\n${HANDSHAKE}${KEY}Sec-WebSocket-Version: 99\r\n\r\n`,
        { 'sec-websocket-version': '13, 8' },
      ],
    ])(
      'when a WebSocket handshake to /graphql has %s, then it is refused with %i %s in the Error shape, as JSON',
      async (_case, status, code, raw, headers) => {
        const answer = parseRawResponse((await exchangeRaw(t.url, raw, { giveUpAfterMs: 5000 })).received);
        expect(answer.status).toBe(status);
        expect(answer.headers).toEqual(expect.objectContaining({ 'content-type': 'application/json; charset=utf-8', ...headers }));
        expect(JSON.parse(answer.body)).toEqual({ code, message: expect.any(String), status });
      },
    );

    test(`when an address holds ${SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress} sockets without connection_init, then its next upgrade is 429 in the Error shape with Retry-After; one that authenticates or closes gives its place back`, async () => {
      const upgradeRequest = `GET /graphql HTTP/1.1\r\n${HANDSHAKE}${KEY}Sec-WebSocket-Version: 13\r\n\r\n`;
      const open = () =>
        new Promise<WebSocket>((resolve, reject) => {
          const socket = new WebSocket(wsUrl(t), 'graphql-transport-ws');
          socket.on('open', () => resolve(socket));
          socket.on('error', reject);
        });
      const refused = async () => parseRawResponse((await exchangeRaw(t.url, upgradeRequest, { giveUpAfterMs: 5000 })).received);
      // All at once: each is closed with 4408 three seconds after it opened.
      const idle = await Promise.all(Array.from({ length: SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress }, open));
      try {
        const answer = await refused();
        expect(answer.status).toBe(429);
        expect(answer.headers).toEqual(expect.objectContaining({ 'content-type': 'application/json; charset=utf-8', 'retry-after': '3' }));
        expect(JSON.parse(answer.body)).toEqual({
          code: 'TOO_MANY_REQUESTS',
          message: `Too many WebSockets from this address awaiting connection_init: at most ${SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress}; send connection_init on those first.`,
          status: 429,
        });
        // Authenticated sockets do not count: once one is acknowledged, a new one is accepted (and is pending in its place).
        idle[0].send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${t.apiKey}` } }));
        expect(JSON.parse(String(await new Promise((resolve) => idle[0].once('message', resolve))))).toEqual({ type: 'connection_ack' });
        idle.push(await open());
        expect((await refused()).status).toBe(429);
        // A pending socket that closes gives its place back.
        const before = await metricValue(metrics, 'petstore_websocket_connections');
        idle[1].terminate();
        while ((await metricValue(metrics, 'petstore_websocket_connections')) === before) await new Promise((r) => setTimeout(r, 10));
        idle.push(await open());
      } finally {
        for (const socket of idle) socket.terminate();
      }
    });

    test('when a client sends nothing after the upgrade, then the socket is closed with 4408 after the init wait', async () => {
      const closed = await new Promise<number>((resolve) => {
        const socket = new WebSocket(wsUrl(t), 'graphql-transport-ws');
        socket.on('close', (code) => resolve(code));
      });
      expect(closed).toBe(4408);
    });

    test(
      'when a peer stops answering pings, then its socket is dropped by the keep-alive',
      async () => {
        // autoPong off: the ws client ignores the server's pings, like a peer that is gone.
        const socket = new WebSocket(wsUrl(t), 'graphql-transport-ws', { autoPong: false });
        await new Promise((resolve) => socket.on('open', resolve));
        socket.send(JSON.stringify({ type: 'connection_init', payload: { Authorization: `Bearer ${t.apiKey}` } }));
        const opened = Date.now();
        let pings = 0;
        socket.on('ping', () => pings++);
        const code = await new Promise<number>((resolve) => socket.on('close', (closeCode) => resolve(closeCode)));
        expect(code).toBe(1006); // terminated, no close frame
        expect(pings).toBeGreaterThanOrEqual(1);
        expect(Date.now() - opened).toBeLessThan(2 * SUBSCRIPTION_LIMITS.keepAliveMs + 2000);
      },
      2 * SUBSCRIPTION_LIMITS.keepAliveMs + 10_000,
    );
  });
});
