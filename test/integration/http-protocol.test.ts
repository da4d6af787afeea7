import { exchangeRaw, parseRawResponse } from '../helpers/raw-http';
import { countPets, startTestApp, type TestApp } from '../helpers/test-app';
import { HTTP_LIMITS } from '../../src/limits';

/**
 * What a client sees of the answers Node's HTTP layer would write itself (before any route):
 * the spec's Error body on every one, no body on a HEAD answer, and the timeouts of docs/security.md
 * "Limits". Raw sockets, as such requests cannot be sent or read through fetch.
 */
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());
beforeEach(() => t.clearPets());

/** The spec's Error body, with `status` equal to the HTTP status. */
function expectErrorBody(received: string, status: number, code: string) {
  const response = parseRawResponse(received);
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(JSON.parse(response.body)).toEqual({ code, message: expect.any(String), status });
}

describe('requests Node itself would refuse with an empty body', () => {
  const json = 'Content-Type: application/json\r\nContent-Length: 31\r\n\r\n{"name":"Rex","categoryId":1}  ';
  test.each([
    ['an HTTP/1.1 request without Host to /v1', 400, 'BAD_REQUEST', `POST /v1/pets HTTP/1.1\r\nAuthorization: Bearer KEY\r\n${json}`],
    ['an HTTP/1.1 request without Host to /graphql', 400, 'BAD_REQUEST', 'GET /graphql?query=%7B__typename%7D HTTP/1.1\r\n\r\n'],
    ['an HTTP/1.1 request with two Host headers', 400, 'BAD_REQUEST', `POST /v1/pets HTTP/1.1\r\nHost: x\r\nHost: y\r\nAuthorization: Bearer KEY\r\n${json}`],
    [
      'a good then a bad Authorization',
      400,
      'BAD_REQUEST',
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nAuthorization: Bearer bad\r\n${json}`,
    ],
    [
      'a bad then a good Authorization',
      400,
      'BAD_REQUEST',
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer bad\r\nAuthorization: Bearer KEY\r\n${json}`,
    ],
    [
      'two Authorization headers to /graphql',
      400,
      'BAD_REQUEST',
      `GET /graphql?query=%7B__typename%7D HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nauthorization: Bearer KEY\r\n\r\n`,
    ],
    ['an unknown Expect to /v1', 417, 'EXPECTATION_FAILED', `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nExpect: teapot\r\n${json}`],
    ['an unknown Expect to /graphql', 417, 'EXPECTATION_FAILED', `POST /graphql HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n${json}`],
  ])('when a client sends %s, then %s %s in the Error shape and nothing is stored', async (_case, status, code, raw) => {
    const { received } = await exchangeRaw(t.url, raw.replace('KEY', t.apiKey));
    expectErrorBody(received, status, code);
    expect(await countPets(t)).toBe(0);
  });

  test('when an HTTP/1.0 request has no Host (which HTTP/1.0 allows), then it is served', async () => {
    const { received } = await exchangeRaw(t.url, 'GET /healthz HTTP/1.0\r\n\r\n');
    expect(parseRawResponse(received).status).toBe(200);
  });

  test('when a create is sent with Expect: 100-continue, then 100 Continue and the pet is created', async () => {
    const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.apiKey}\r\nExpect: 100-continue\r\nConnection: close\r\n`;
    const { received } = await exchangeRaw(t.url, head + json);
    expect(received).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /);
    expect(await countPets(t)).toBe(1);
  });
});

describe('a HEAD request refused while Node parses it', () => {
  test.each([
    ['headers over 16 KiB', 431, (method: string) => `${method} /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
    ['a malformed header', 400, (method: string) => `${method} /v1/pets HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n`],
    [
      'a malformed header, after a request served on the same connection',
      400,
      (method: string) => `GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n${method} /v1/pets HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n`,
    ],
    ['no Host header', 400, (method: string) => `${method} /v1/pets HTTP/1.1\r\n\r\n`],
  ])('when it has %s, then %s with nothing after the head, where GET gets the Error body', async (_case, status, raw) => {
    const lastResponse = (received: string) => received.slice([...received.matchAll(/HTTP\/1\.1 \d{3} /g)].at(-1)?.index ?? 0);
    const head = parseRawResponse(lastResponse((await exchangeRaw(t.url, raw('HEAD'))).received));
    expect(head.status).toBe(status);
    expect(head.body).toBe('');
    const get = lastResponse((await exchangeRaw(t.url, raw('GET'))).received);
    expectErrorBody(get, status, status === 431 ? 'REQUEST_HEADER_FIELDS_TOO_LARGE' : 'BAD_REQUEST');
  });
});

describe('raw answers on sockets Fastify does not own', () => {
  const upgrade = 'Host: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
  const headOf = async (raw: string) => parseRawResponse((await exchangeRaw(t.url, raw, { giveUpAfterMs: 5000 })).received);

  test("when Node refuses a request and when a WebSocket upgrade is refused, then both carry a Fastify error answer's headers and a JSON body ending with a newline", async () => {
    const clientError = await headOf('GET /v1/pets HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n');
    const refusedUpgrade = await headOf(`GET /nowhere HTTP/1.1\r\n${upgrade}`);
    const fastifyError = await fetch(`${t.url}/nowhere`);
    const shared = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };
    for (const [name, value] of Object.entries(shared)) expect(fastifyError.headers.get(name)).toBe(value);
    for (const answer of [clientError, refusedUpgrade]) {
      const { 'content-length': length, ...rest } = answer.headers;
      expect(rest).toEqual({ ...shared, connection: 'close' });
      expect(Number(length)).toBe(Buffer.byteLength(answer.body));
      expect(answer.body).toMatch(/^\{.*\}\n$/);
    }
  });

  test('when a HEAD request asks for a WebSocket, then it is refused 405 with nothing after the head', async () => {
    const answer = await headOf(`HEAD /graphql HTTP/1.1\r\n${upgrade}`);
    expect(answer.status).toBe(405);
    expect(answer.headers.allow).toBe('GET');
    expect(Number(answer.headers['content-length'])).toBeGreaterThan(0);
    expect(answer.body).toBe('');
  });
});

describe('timeouts (docs/security.md "Limits")', () => {
  const requestTimeout = HTTP_LIMITS.requestTimeoutMs;
  // Concurrent: each waits for the server to close, about 10 s.
  test.concurrent.each([
    ['sends nothing', ''],
    ['sends half a request head', 'GET /v1/pets HTTP/1.1\r\nHost: x\r\n'],
    [
      'sends a head and half its body',
      'POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"name":',
    ],
  ])(
    `when a client opens a connection and %s, then it is answered 408 and closed after ${requestTimeout / 1000} s (within 2 s)`,
    async (_case, raw) => {
      const { received, closedAfterMs } = await exchangeRaw(t.url, raw.replace('KEY', t.apiKey), { giveUpAfterMs: 45_000 });
      expect(Math.round(closedAfterMs)).toBeGreaterThanOrEqual(requestTimeout);
      expect(Math.round(closedAfterMs)).toBeLessThan(requestTimeout + 2_000);
      expectErrorBody(received, 408, 'REQUEST_TIMEOUT');
    },
    50_000,
  );

  // Node announces keepAliveTimeout in `Keep-Alive: timeout=5` and closes the idle connection a
  // fixed second later, so a client that honours the announcement never reuses a closing one.
  test(`when a keep-alive connection is idle after a response, then it is announced as ${HTTP_LIMITS.keepAliveTimeoutMs / 1000} s and closed after it (within 2 s)`, async () => {
    const { received, idleBeforeCloseMs } = await exchangeRaw(t.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', { giveUpAfterMs: 45_000 });
    const response = parseRawResponse(received);
    expect(response.status).toBe(200);
    expect(response.headers['keep-alive']).toBe(`timeout=${HTTP_LIMITS.keepAliveTimeoutMs / 1000}`);
    expect(response.body).toBe('{"status":"ok"}\n'); // one answer, nothing sent at the close
    expect(Math.round(idleBeforeCloseMs)).toBeGreaterThanOrEqual(HTTP_LIMITS.keepAliveTimeoutMs);
    expect(Math.round(idleBeforeCloseMs)).toBeLessThan(HTTP_LIMITS.keepAliveTimeoutMs + 2_000);
  }, 50_000);
});
