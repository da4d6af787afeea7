import { PassThrough } from 'node:stream';
import type { Socket } from 'node:net';
import { ApolloServerErrorCode } from '@apollo/server/errors';
import fastify, { type FastifyInstance } from 'fastify';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { CommitOutcomeUnknownError, DatabaseDeadlineError } from '../../src/database/database-errors';
import { AppError, ERROR_CATALOGUE, type ErrorCode, codeForStatus, toAppError } from '../../src/errors/error-catalogue';
import { writeRawHttpError } from '../../src/http/raw-http-error';
import { createGraphqlErrorFormatter, sendGraphqlError, thrownGraphqlError } from '../../src/graphql/graphql-error.formatter';
import { answerClientError, refuseUnknownRoute, sendError } from '../../src/http/error.handler';

/**
 * The error catalogue and its two translations, in process (test/error-catalogue.test.ts does it over a listening
 * server): REST's sendError and GraphQL's sendGraphqlError through Fastify's inject (no socket), formatError called
 * directly, and the raw answer for Node's client errors written to an in-memory stream.
 */

const CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];
const entryOf = (code: ErrorCode): { status: number; message: string; retryAfterSeconds?: number } => ERROR_CATALOGUE[code];
const STACK_OR_SQL = /\.[jt]s:\d|\n\s+at |SELECT|ER_NO_SUCH_TABLE|api_key/;

/** A Fastify app (never listening) whose routes throw what the test gives, with the app's handlers, logging errors into `logLines`. */
let app: FastifyInstance;
const logLines: Array<Record<string, any>> = [];
let toThrow: unknown;
beforeAll(async () => {
  app = fastify({ logger: { level: 'error', stream: { write: (line: string) => void logLines.push(JSON.parse(line)) } } });
  app.setErrorHandler(sendError);
  app.setNotFoundHandler(refuseUnknownRoute);
  app.get('/rest', async () => {
    throw toThrow;
  });
  app.get('/graphql', { errorHandler: (error, request, reply) => sendGraphqlError(error, request, reply) }, async () => {
    throw toThrow;
  });
  app.get('/graphql-with-extensions', { errorHandler: (error, request, reply) => sendGraphqlError(error, request, reply, { trace: 'kept' }) }, async () => {
    throw toThrow;
  });
  await app.ready();
});
afterAll(() => app.close());
beforeEach(() => {
  logLines.length = 0;
});

async function inject(path: string, error: unknown, headers: Record<string, string> = {}) {
  toThrow = error;
  const response = await app.inject({ method: 'GET', url: path, headers });
  return { status: response.statusCode, headers: response.headers, body: response.json() };
}

/** formatError with a log of what it called unexpected. */
function format(formatted: GraphQLFormattedError, error: unknown) {
  const unexpected: unknown[] = [];
  return { result: createGraphqlErrorFormatter((e) => unexpected.push(e))(formatted, error), unexpected };
}

/** What a PassThrough standing in for a socket received, and whether it was ended. */
function fakeSocket(writable = true) {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  if (!writable) stream.end();
  return { socket: stream as unknown as Socket, text: () => Buffer.concat(chunks).toString('latin1'), ended: () => stream.writableEnded };
}

describe('the catalogue', () => {
  test('when read, then every code has a 200 or error status, a message ending in a period, and SCREAMING_SNAKE_CASE', () => {
    for (const code of CODES) {
      const { status, message } = entryOf(code);
      expect({ code, ok: /^[A-Z]+(_[A-Z]+)*$/.test(code) && (status === 200 || (status >= 400 && status < 600)) && /\.$/.test(message) }).toEqual({
        code,
        ok: true,
      });
    }
  });

  test('when counted, then 26 codes, and only SERVICE_UNAVAILABLE carries Retry-After (1 s)', () => {
    expect(CODES).toHaveLength(26);
    expect(CODES.filter((code) => entryOf(code).retryAfterSeconds !== undefined).map((code) => [code, entryOf(code).retryAfterSeconds])).toEqual([
      ['SERVICE_UNAVAILABLE', 1],
    ]);
  });

  test("when compared with Apollo Server's codes, then each is catalogued", () => {
    for (const code of Object.values(ApolloServerErrorCode)) expect(CODES).toContain(code);
  });
});

describe('AppError', () => {
  test.each(CODES)('when %s is raised with no message, then the catalogue status and message, and its body', (code) => {
    const error = new AppError(code);
    expect({ name: error.name, status: error.status, message: error.message, isError: error instanceof Error }).toEqual({
      name: 'AppError',
      status: entryOf(code).status,
      message: entryOf(code).message,
      isError: true,
    });
    expect(error.toBody()).toEqual({ code, message: entryOf(code).message, status: entryOf(code).status });
    expect(error.headers).toEqual(entryOf(code).retryAfterSeconds === undefined ? {} : { 'Retry-After': String(entryOf(code).retryAfterSeconds) });
  });

  test('when given a message and headers, then they are kept, after the catalogue Retry-After which they may replace', () => {
    expect(new AppError('TOO_MANY_REQUESTS', 'Slow down.', { 'Retry-After': '17' }).headers).toEqual({ 'Retry-After': '17' });
    expect(new AppError('SERVICE_UNAVAILABLE', 'Later.', { 'X-Why': 'db' }).headers).toEqual({ 'Retry-After': '1', 'X-Why': 'db' });
    expect(new AppError('SERVICE_UNAVAILABLE', undefined, { 'Retry-After': '5' }).headers).toEqual({ 'Retry-After': '5' });
    expect(new AppError('NOT_FOUND', 'No pet 5.').toBody()).toEqual({ code: 'NOT_FOUND', message: 'No pet 5.', status: 404 });
  });
});

describe('codeForStatus', () => {
  test.each([
    [400, 'BAD_REQUEST'],
    [401, 'UNAUTHENTICATED'],
    [404, 'NOT_FOUND'],
    [405, 'METHOD_NOT_ALLOWED'],
    [406, 'NOT_ACCEPTABLE'],
    [408, 'REQUEST_TIMEOUT'],
    [409, 'IDEMPOTENCY_KEY_IN_USE'],
    [413, 'PAYLOAD_TOO_LARGE'],
    [414, 'URI_TOO_LONG'],
    [415, 'UNSUPPORTED_MEDIA_TYPE'],
    [417, 'EXPECTATION_FAILED'],
    [422, 'IDEMPOTENCY_KEY_REUSED'],
    [429, 'TOO_MANY_REQUESTS'],
    [431, 'REQUEST_HEADER_FIELDS_TOO_LARGE'],
    [500, 'INTERNAL_SERVER_ERROR'],
    [503, 'SERVICE_UNAVAILABLE'],
    [504, 'GATEWAY_TIMEOUT'],
  ])('when the status is %i, then %s (the first code with it)', (status, code) => {
    expect(codeForStatus(status)).toBe(code);
  });

  test.each([200, 204, 301, 399, 402, 418, 451, 502, 599])('when the status is %i, then no code', (status) => {
    expect(codeForStatus(status)).toBeUndefined();
  });
});

describe('toAppError', () => {
  test('when given an AppError, then the same one, not unexpected', () => {
    const error = new AppError('NOT_FOUND', 'gone');
    expect(toAppError(error)).toEqual({ appError: error, unexpected: false });
    expect(toAppError(error).appError).toBe(error);
  });

  test.each(CODES.filter((code) => entryOf(code).status >= 400 && entryOf(code).status < 500 && codeForStatus(entryOf(code).status) === code))(
    "when Fastify raises %s's status, then that code with Fastify's message, not unexpected",
    (code) => {
      const { appError, unexpected } = toAppError(Object.assign(new Error('framework says no'), { statusCode: entryOf(code).status }));
      expect({ body: appError.toBody(), unexpected }).toEqual({
        body: { code, message: 'framework says no', status: entryOf(code).status },
        unexpected: false,
      });
    },
  );

  test("when a 4xx error has an empty message, then the catalogue's message", () => {
    expect(toAppError(Object.assign(new Error(''), { statusCode: 413 })).appError.message).toBe(ERROR_CATALOGUE.PAYLOAD_TOO_LARGE.message);
  });

  test.each([
    ['a plain Error with SQL in it', new Error('ER_NO_SUCH_TABLE: SELECT * FROM secret')],
    ['a 5xx statusCode (not trusted)', Object.assign(new Error('upstream down'), { statusCode: 503 })],
    ['a 4xx statusCode outside the catalogue', Object.assign(new Error("I'm a teapot"), { statusCode: 418 })],
    ['a statusCode under 400', Object.assign(new Error('moved'), { statusCode: 302 })],
    ['a statusCode as text', Object.assign(new Error('bad'), { statusCode: '400' })],
    ['a duplicate key (a bug, not unavailability)', Object.assign(new Error('Duplicate entry'), { code: 'ER_DUP_ENTRY' })],
    ['a string', 'boom'],
    ['null', null],
    ['undefined', undefined],
    ['a number', 42],
  ])('when %s is thrown, then INTERNAL_SERVER_ERROR with the generic message, unexpected', (_case, thrown) => {
    const { appError, unexpected } = toAppError(thrown);
    expect({ body: appError.toBody(), headers: appError.headers, unexpected }).toEqual({
      body: { code: 'INTERNAL_SERVER_ERROR', message: 'An unexpected error occurred.', status: 500 },
      headers: {},
      unexpected: true,
    });
  });

  test.each([
    ['our deadline', new DatabaseDeadlineError(2000)],
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:3306'), { code: 'ECONNREFUSED' })],
    ['a lost connection wrapped by TypeORM', Object.assign(new Error('QueryFailedError'), { driverError: { code: 'PROTOCOL_CONNECTION_LOST' } })],
    ['a deadlock', Object.assign(new Error('Deadlock found'), { code: 'ER_LOCK_DEADLOCK' })],
    ['a read-only primary', Object.assign(new Error('--read-only'), { code: 'ER_OPTION_PREVENTS_STATEMENT' })],
    ['too many connections', Object.assign(new Error('Too many connections'), { code: 'ER_CON_COUNT_ERROR' })],
  ])('when the database is unavailable (%s), then SERVICE_UNAVAILABLE with Retry-After 1, unexpected', (_case, thrown) => {
    const { appError, unexpected } = toAppError(thrown);
    expect({ body: appError.toBody(), headers: appError.headers, unexpected }).toEqual({
      body: { code: 'SERVICE_UNAVAILABLE', message: ERROR_CATALOGUE.SERVICE_UNAVAILABLE.message, status: 503 },
      headers: { 'Retry-After': '1' },
      unexpected: true,
    });
  });

  test('when a commit was never confirmed, then GATEWAY_TIMEOUT (504), never the "safe to retry" 503', () => {
    const { appError, unexpected } = toAppError(new CommitOutcomeUnknownError('lost at COMMIT', {}, undefined));
    expect({ body: appError.toBody(), headers: appError.headers, unexpected }).toEqual({
      body: { code: 'GATEWAY_TIMEOUT', message: ERROR_CATALOGUE.GATEWAY_TIMEOUT.message, status: 504 },
      headers: {},
      unexpected: true,
    });
  });
});

describe('REST: sendError (through inject, no socket)', () => {
  test.each(CODES)('when a handler throws %s, then its status, headers and {code, message, status}', async (code) => {
    const response = await inject('/rest', new AppError(code, undefined, { 'X-Test': 'kept' }));
    expect(response.status).toBe(entryOf(code).status);
    expect(response.headers['x-test']).toBe('kept');
    expect(response.headers['retry-after']).toBe(entryOf(code).retryAfterSeconds === undefined ? undefined : String(entryOf(code).retryAfterSeconds));
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.body).toEqual({ code, message: entryOf(code).message, status: entryOf(code).status });
    expect(logLines).toEqual([]);
  });

  test('when a handler throws anything unexpected, then 500 with the generic body, no stack or SQL, and the error logged in full', async () => {
    const response = await inject('/rest', new Error('ER_NO_SUCH_TABLE: SELECT password FROM api_key'));
    expect(response.status).toBe(500);
    expect(response.body).toEqual({ code: 'INTERNAL_SERVER_ERROR', message: 'An unexpected error occurred.', status: 500 });
    expect(JSON.stringify(response.body)).not.toMatch(STACK_OR_SQL);
    expect(logLines).toHaveLength(1);
    expect(logLines[0]).toMatchObject({ level: 50, msg: 'unexpected error', err: { message: 'ER_NO_SUCH_TABLE: SELECT password FROM api_key' } });
  });

  test("when a call's deadline was what was left of its request's budget, then the logged message names it in whole milliseconds", () => {
    expect(new DatabaseDeadlineError(1997.0048880000004).message).toBe('The database did not answer within 1997 ms.');
  });

  test('when the database is unavailable, then 503 with Retry-After: 1, logged as unexpected', async () => {
    const response = await inject('/rest', new DatabaseDeadlineError(2000));
    expect({ status: response.status, retryAfter: response.headers['retry-after'], body: response.body }).toEqual({
      status: 503,
      retryAfter: '1',
      body: { code: 'SERVICE_UNAVAILABLE', message: ERROR_CATALOGUE.SERVICE_UNAVAILABLE.message, status: 503 },
    });
    expect(logLines).toHaveLength(1);
  });

  test('when no route matches, then 404 NOT_FOUND naming the method and path without the query', async () => {
    const response = await app.inject({ method: 'DELETE', url: '/nowhere/here?secret=1' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({ code: 'NOT_FOUND', message: 'No route DELETE /nowhere/here.', status: 404 });
  });
});

describe('GraphQL before Apollo runs: sendGraphqlError (through inject)', () => {
  test.each(CODES)('when %s is thrown, then its status and {errors: [{message, extensions: {code}}]}, as REST says it', async (code) => {
    const rest = await inject('/rest', new AppError(code));
    const graphql = await inject('/graphql', new AppError(code));
    const retry = entryOf(code).retryAfterSeconds;
    expect(graphql.status).toBe(rest.status);
    expect(graphql.headers['retry-after']).toBe(rest.headers['retry-after']);
    expect(graphql.body).toEqual({
      errors: [{ message: rest.body.message, extensions: { code: rest.body.code, ...(retry !== undefined && { retryAfterSeconds: retry }) } }],
    });
  });

  test.each([
    [undefined, 'application/json; charset=utf-8'],
    ['application/graphql-response+json', 'application/graphql-response+json; charset=utf-8'],
    ['application/json', 'application/json; charset=utf-8'],
    ['application/graphql-response+json, application/json;q=0.9', 'application/graphql-response+json; charset=utf-8'],
    ['*/*', 'application/json; charset=utf-8'],
    ['text/html', 'application/json; charset=utf-8'],
  ])('when Accept is %p, then the answer is %s (the type Apollo would choose)', async (accept, type) => {
    const response = await inject('/graphql', new AppError('PAYLOAD_TOO_LARGE'), accept ? { accept } : {});
    expect(response.headers['content-type']).toBe(type);
    expect(response.status).toBe(413);
  });

  test('when extensions are given, then they sit beside errors', async () => {
    const response = await inject('/graphql-with-extensions', new AppError('TOO_MANY_REQUESTS'));
    expect(response.body).toEqual({
      errors: [{ message: ERROR_CATALOGUE.TOO_MANY_REQUESTS.message, extensions: { code: 'TOO_MANY_REQUESTS' } }],
      extensions: { trace: 'kept' },
    });
  });

  test('when anything unexpected is thrown, then 500 INTERNAL_SERVER_ERROR without internals, logged', async () => {
    const response = await inject('/graphql', new Error('ER_PARSE_ERROR near SELECT'));
    expect(response.status).toBe(500);
    expect(response.body).toEqual({ errors: [{ message: 'An unexpected error occurred.', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] });
    expect(logLines).toHaveLength(1);
  });

  test("when Fastify rejects the body (a 400 from the JSON parser), then BAD_REQUEST with Fastify's message", async () => {
    const response = await inject('/graphql', Object.assign(new Error('Body is not valid UTF-8.'), { statusCode: 400 }));
    expect(response.body).toEqual({ errors: [{ message: 'Body is not valid UTF-8.', extensions: { code: 'BAD_REQUEST' } }] });
  });
});

describe('GraphQL in Apollo: formatError', () => {
  test.each(CODES)('when a resolver throws %s, then its message, location and path, and only code (and retry hint) in extensions', (code) => {
    const error = new GraphQLError('wrapped', { path: ['pets', 0], originalError: new AppError(code, 'the message') });
    const retry = entryOf(code).retryAfterSeconds;
    expect(
      format({ message: 'wrapped', locations: [{ line: 1, column: 3 }], path: ['pets', 0], extensions: { code: 'X', stacktrace: ['at x'] } }, error),
    ).toEqual({
      result: {
        message: 'the message',
        locations: [{ line: 1, column: 3 }],
        path: ['pets', 0],
        extensions: { code, ...(retry !== undefined && { retryAfterSeconds: retry }) },
      },
      unexpected: [],
    });
  });

  test.each(CODES)('when a plugin throws thrownGraphqlError(%s), then Apollo gets its status and headers, and formatError its code', (code) => {
    const thrown = thrownGraphqlError(code);
    expect(thrown.extensions).toEqual({ code, http: { status: entryOf(code).status, headers: new Map(Object.entries(new AppError(code).headers)) } });
    const retry = entryOf(code).retryAfterSeconds;
    expect(format({ message: thrown.message, extensions: thrown.extensions }, thrown).result).toEqual({
      message: entryOf(code).message,
      extensions: { code, ...(retry !== undefined && { retryAfterSeconds: retry }) },
    });
  });

  test('when thrownGraphqlError gets an AppError or a message, then it keeps the message and headers', () => {
    const error = thrownGraphqlError(new AppError('TOO_MANY_REQUESTS', 'Wait.', { 'Retry-After': '9' }));
    expect(error.message).toBe('Wait.');
    expect(error.extensions.http).toEqual({ status: 429, headers: new Map([['Retry-After', '9']]) });
    expect(thrownGraphqlError('BAD_USER_INPUT', 'No.').message).toBe('No.');
  });

  test.each([
    ['GRAPHQL_PARSE_FAILED', 'Syntax Error: Expected Name, found <EOF>.', 400],
    ['GRAPHQL_VALIDATION_FAILED', 'Cannot query field "petz" on type "Query".', 400],
    ['BAD_USER_INPUT', 'Variable "$n" got invalid value "x"', 400],
    ['OPERATION_RESOLUTION_FAILURE', 'Unknown operation named "X".', 400],
    ['PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound', 200],
    ['BAD_REQUEST', 'POST body missing.', 400],
    ['BAD_USER_INPUT', 'no status given', undefined],
  ])("when Apollo raises %s (HTTP %p), then its code and message are kept, Apollo's other extensions dropped", (code, message, status) => {
    const error = new GraphQLError(message, { extensions: { code, ...(status !== undefined && { http: { status } }) } });
    expect(format({ message, locations: [{ line: 1, column: 1 }], extensions: { code, stacktrace: ['GraphQLError: at x.js:1'] } }, error)).toEqual({
      result: { message, locations: [{ line: 1, column: 1 }], extensions: { code } },
      unexpected: [],
    });
  });

  test.each([
    ['BAD_REQUEST', 405, 'METHOD_NOT_ALLOWED'],
    ['BAD_REQUEST', 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['BAD_REQUEST', 406, 'NOT_ACCEPTABLE'],
    ['MAX_RECURSIVE_SELECTIONS_EXCEEDED', 400, 'BAD_REQUEST'],
    ['SOMETHING_NEW', 429, 'TOO_MANY_REQUESTS'],
  ])("when Apollo's code %s comes with HTTP %i, then the status's code %s", (code, status, expected) => {
    const error = new GraphQLError('said Apollo', { extensions: { code, http: { status } } });
    expect(format({ message: 'said Apollo', extensions: { code } }, error)).toEqual({
      result: { message: 'said Apollo', extensions: { code: expected } },
      unexpected: [],
    });
  });

  test('when a resolver throws anything unexpected, then INTERNAL_SERVER_ERROR with the generic message, no stack, and it is logged', () => {
    const original = new Error('ER_NO_SUCH_TABLE: SELECT * FROM pet');
    const error = new GraphQLError(original.message, { path: ['pets'], originalError: original });
    const { result, unexpected } = format(
      {
        message: original.message,
        locations: [{ line: 1, column: 3 }],
        path: ['pets'],
        extensions: { code: 'INTERNAL_SERVER_ERROR', stacktrace: [original.stack] },
      },
      error,
    );
    expect(result).toEqual({
      message: 'An unexpected error occurred.',
      locations: [{ line: 1, column: 3 }],
      path: ['pets'],
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
    expect(JSON.stringify(result)).not.toMatch(STACK_OR_SQL);
    expect(unexpected).toEqual([original]);
  });

  test.each([
    ['unknown code, no status', { code: 'DOWNSTREAM_SERVICE_ERROR' }],
    ['no code at all', undefined],
    ['INTERNAL_SERVER_ERROR with status 500', { code: 'INTERNAL_SERVER_ERROR', http: { status: 500 } }],
    ['unknown code with a status outside the catalogue', { code: 'X', http: { status: 418 } }],
  ])('when an error has %s, then it is masked as INTERNAL_SERVER_ERROR and logged', (_case, extensions) => {
    const error = new GraphQLError('internal detail at db.ts:12', { extensions });
    const { result, unexpected } = format({ message: 'internal detail at db.ts:12', ...(extensions && { extensions: { code: extensions.code } }) }, error);
    expect(result).toEqual({ message: 'An unexpected error occurred.', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
    expect(unexpected).toHaveLength(1);
  });

  test.each([
    ['a database deadline', 'SERVICE_UNAVAILABLE', { retryAfterSeconds: 1 }, new DatabaseDeadlineError(2000)],
    ['a lost connection', 'SERVICE_UNAVAILABLE', { retryAfterSeconds: 1 }, Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })],
    ['an unconfirmed commit', 'GATEWAY_TIMEOUT', {}, new CommitOutcomeUnknownError('lost', {}, undefined)],
  ])('when a resolver fails with %s, then %s as on REST, logged', (_case, code, hint, original) => {
    const error = new GraphQLError(original.message, { path: ['createPet'], originalError: original });
    const { result, unexpected } = format({ message: original.message, path: ['createPet'], extensions: { code: 'INTERNAL_SERVER_ERROR' } }, error);
    expect(result).toEqual({ message: ERROR_CATALOGUE[code as ErrorCode].message, path: ['createPet'], extensions: { code, ...hint } });
    expect(unexpected).toEqual([original]);
  });

  test.each(CODES)('when %s reaches a client, then both surfaces agree on code, message and retry time', async (code) => {
    const rest = await inject('/rest', new AppError(code));
    const graphql = format({ message: 'x' }, new GraphQLError('x', { path: ['pets'], originalError: new AppError(code) })).result;
    expect({ code: graphql.extensions?.code, message: graphql.message, retry: graphql.extensions?.retryAfterSeconds }).toEqual({
      code: rest.body.code,
      message: rest.body.message,
      retry: rest.headers['retry-after'] === undefined ? undefined : Number(rest.headers['retry-after']),
    });
  });
});

describe("Node's client errors: answerClientError and writeRawHttpError (an in-memory stream for the socket)", () => {
  const bodyOf = (code: ErrorCode) => `${JSON.stringify(new AppError(code).toBody())}\n`;
  const raw = (status: string, code: ErrorCode, body: string | null, extra = '') =>
    `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\n${extra}Content-Length: ${Buffer.byteLength(bodyOf(code))}\r\n` +
    `Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body ?? ''}`;

  test.each([
    ['HPE_HEADER_OVERFLOW', '431 Request Header Fields Too Large', 'REQUEST_HEADER_FIELDS_TOO_LARGE'],
    ['ERR_HTTP_REQUEST_TIMEOUT', '408 Request Timeout', 'REQUEST_TIMEOUT'],
    ['HPE_INVALID_METHOD', '400 Bad Request', 'BAD_REQUEST'],
    [undefined, '400 Bad Request', 'BAD_REQUEST'],
  ] as const)('when Node reports %p, then "%s" with the Error body, and the connection is ended', (errorCode, status, code) => {
    const { socket, text, ended } = fakeSocket();
    answerClientError(Object.assign(new Error('parse error'), { code: errorCode }), socket);
    expect(text()).toBe(raw(status, code, bodyOf(code)));
    expect(ended()).toBe(true);
  });

  test.each([
    ['a HEAD request', 'HEAD / HTTP/1.1\r\n', null],
    ['a GET after a served HEAD on the same connection', 'HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\n', bodyOf('BAD_REQUEST')],
    ['a HEAD after a served GET', 'GET / HTTP/1.1\r\nHost: x\r\n\r\nHEAD /x HTTP/1.1\r\n', null],
    ['bytes with no request line', 'garbage', bodyOf('BAD_REQUEST')],
  ])('when the bytes parsed hold %s, then a body only when the last request is not HEAD', (_case, packet, body) => {
    const { socket, text } = fakeSocket();
    answerClientError(Object.assign(new Error('bad'), { code: 'HPE_INVALID_HEADER_TOKEN', rawPacket: Buffer.from(packet, 'latin1') }), socket);
    expect(text()).toBe(raw('400 Bad Request', 'BAD_REQUEST', body));
  });

  test('when the socket is no longer writable, then nothing is written', () => {
    const { socket, text } = fakeSocket(false);
    answerClientError(Object.assign(new Error('late'), { code: 'ECONNRESET' }), socket);
    expect(text()).toBe('');
  });

  test("when a 503 is written raw, then its Retry-After is among the headers, as Fastify's answers carry it", () => {
    const { socket, text } = fakeSocket();
    writeRawHttpError(socket, new AppError('SERVICE_UNAVAILABLE'));
    expect(text()).toBe(raw('503 Service Unavailable', 'SERVICE_UNAVAILABLE', bodyOf('SERVICE_UNAVAILABLE'), 'Retry-After: 1\r\n'));
  });
});
