import { ApolloServerErrorCode } from '@apollo/server/errors';
import fastify from 'fastify';
import { GraphQLError } from 'graphql';
import { AppError, ERROR_CATALOGUE, type ErrorCode, toAppError } from '../../src/errors/error-catalogue';
import { createGraphqlErrorFormatter, sendGraphqlError } from '../../src/graphql/graphql-error.formatter';
import { sendError } from '../../src/http/error.handler';
import { graphql, request, startTestApp } from '../helpers/test-app';

const codes = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

/** What a GraphQL error of `code` adds to `extensions`: the catalogue's Retry-After, when it has one. */
function retryHint(code: ErrorCode): { retryAfterSeconds?: number } {
  const entry: { status: number; retryAfterSeconds?: number } = ERROR_CATALOGUE[code];
  return entry.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: entry.retryAfterSeconds };
}

describe('the catalogue', () => {
  test('when read, then every code has a status and a message', () => {
    for (const code of codes) {
      expect(code).toMatch(/^[A-Z_]+$/);
      expect(ERROR_CATALOGUE[code].message.length).toBeGreaterThan(0);
      expect([200, 400, 401, 403, 404, 405, 406, 408, 409, 413, 414, 415, 417, 422, 429, 431, 500, 503, 504]).toContain(ERROR_CATALOGUE[code].status);
    }
  });

  test('when compared with Apollo Server, then every code Apollo can send is catalogued', () => {
    for (const code of Object.values(ApolloServerErrorCode)) expect(codes).toContain(code);
  });
});

describe('the two surfaces translate every code the same way', () => {
  const app = fastify();
  app.get('/rest/:code', { errorHandler: sendError }, async (req) => {
    throw new AppError((req.params as { code: ErrorCode }).code, undefined, { 'X-Test': 'kept' });
  });
  app.get('/graphql/:code', { errorHandler: sendGraphqlError }, async (req) => {
    throw new AppError((req.params as { code: ErrorCode }).code);
  });
  let base = '';
  beforeAll(async () => {
    base = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => app.close());

  test.each(codes)('when %s is thrown, then REST sends {code, message, status} with that HTTP status', async (code) => {
    const response = await fetch(`${base}/rest/${code}`);
    expect(response.status).toBe(ERROR_CATALOGUE[code].status);
    expect(response.headers.get('x-test')).toBe('kept');
    expect(await response.json()).toEqual({ code, message: ERROR_CATALOGUE[code].message, status: ERROR_CATALOGUE[code].status });
  });

  test.each(codes)('when %s is thrown before GraphQL runs, then the GraphQL body carries it in extensions.code', async (code) => {
    const response = await fetch(`${base}/graphql/${code}`);
    expect(response.status).toBe(ERROR_CATALOGUE[code].status);
    expect(await response.json()).toEqual({ errors: [{ message: ERROR_CATALOGUE[code].message, extensions: { code, ...retryHint(code) } }] });
  });

  test.each(codes)('when a resolver throws %s, then formatError keeps the code and nothing else but its retry hint', (code) => {
    const logged: unknown[] = [];
    const error = new GraphQLError('wrapped', { path: ['pets'], originalError: new AppError(code, 'the message') });
    const formatted = createGraphqlErrorFormatter((e) => logged.push(e))({ message: 'wrapped', path: ['pets'] }, error);
    expect(formatted).toEqual({ message: 'the message', path: ['pets'], extensions: { code, ...retryHint(code) } });
    expect(logged).toHaveLength(0);
  });

  test.each([
    [400, 'BAD_REQUEST'],
    [404, 'NOT_FOUND'],
    [405, 'METHOD_NOT_ALLOWED'],
    [413, 'PAYLOAD_TOO_LARGE'],
    [415, 'UNSUPPORTED_MEDIA_TYPE'],
  ])('when Fastify raises a %s, then it becomes %s', (statusCode, code) => {
    const { appError, unexpected } = toAppError(Object.assign(new Error('framework says no'), { statusCode }));
    expect(appError.toBody()).toEqual({ code, message: 'framework says no', status: statusCode });
    expect(unexpected).toBe(false);
  });

  test('when anything else is thrown, then INTERNAL_SERVER_ERROR with the generic message only', () => {
    const { appError, unexpected } = toAppError(new Error('ER_NO_SUCH_TABLE: SELECT * FROM secret'));
    expect(appError.toBody()).toEqual({ code: 'INTERNAL_SERVER_ERROR', message: ERROR_CATALOGUE.INTERNAL_SERVER_ERROR.message, status: 500 });
    expect(unexpected).toBe(true);
  });
});

describe('unexpected failures on the real app', () => {
  test('when the database fails under a request, then 500 on REST and INTERNAL_SERVER_ERROR on GraphQL, with no SQL or stack', async () => {
    const t = await startTestApp();
    try {
      await t.dataSource.query('DROP TABLE pet');
      const rest = await request(t, 'GET', '/v1/pets');
      expect(rest.status).toBe(500);
      expect(rest.body).toEqual({ code: 'INTERNAL_SERVER_ERROR', message: ERROR_CATALOGUE.INTERNAL_SERVER_ERROR.message, status: 500 });
      const gql = await graphql(t, '{ pets { id } }');
      expect(gql.body.errors).toEqual([
        {
          message: ERROR_CATALOGUE.INTERNAL_SERVER_ERROR.message,
          locations: [{ line: 1, column: 3 }],
          path: ['pets'],
          extensions: { code: 'INTERNAL_SERVER_ERROR' },
        },
      ]);
      expect(JSON.stringify([rest.body, gql.body])).not.toMatch(/pet`|SELECT|table|\.ts:|\.js:/i);
    } finally {
      await t.close();
    }
  });
});
