import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql } from '@apollo/client';
import { cacheExchange, createClient, fetchExchange } from '@urql/core';
import { GraphQLClient } from 'graphql-request';
import { map } from 'rxjs';
import { CSRF_PREVENTION } from '../../src/graphql/csrf-prevention';
import { seedPets } from '../../src/pets/pet.seed';
import { answerOf, countPets, request, startTestApp, type TestApp } from '../helpers/test-app';

/*
 * docs/graphql.md "Clients" and docs/security.md "CSRF": the common GraphQL clients work
 * against /graphql with their default settings and nothing but `Authorization: Bearer <key>`,
 * and what a cross-site page can make a browser send executes nothing.
 */

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());
beforeEach(() => t.clearPets());

const PETS = gql`
  query Pets($limit: Int) {
    pets(limit: $limit) {
      id
      name
      categoryId
      status
    }
  }
`;
const CREATE = gql`
  mutation Create($input: NewPetInput!) {
    createPet(input: $input) {
      id
      name
      categoryId
      status
    }
  }
`;

interface Pet {
  id: string;
  name: string;
  categoryId: number;
  status: string;
}

/** A request as a client library built it, seen on its way to the global fetch. */
interface SentRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
}

/**
 * Calls `run` while watching the global fetch (called through, unchanged: the clients keep their
 * default fetch), and returns what `run` returned and every request made to /graphql.
 */
async function watchingFetch<T>(run: () => Promise<T>): Promise<{ result: T; sent: SentRequest[] }> {
  const sent: SentRequest[] = [];
  const original = globalThis.fetch;
  const spy = jest.spyOn(globalThis, 'fetch').mockImplementation((input, init) => {
    const asRequest = new Request(input, init);
    if (new URL(asRequest.url).pathname === '/graphql') {
      sent.push({ method: asRequest.method, url: asRequest.url, headers: Object.fromEntries(asRequest.headers) });
    }
    return original(input, init);
  });
  try {
    return { result: await run(), sent };
  } finally {
    spy.mockRestore();
  }
}

/** The pet each client creates, and what it must come back as (caching clients add `__typename` to every selection). */
const newPet = (client: string) => ({ name: `Pet of ${client}`, categoryId: 2, status: 'pending' });
const asReturned = (client: string, typename?: 'Pet') => ({
  ...(typename && { __typename: typename }),
  id: expect.stringMatching(/^[1-9][0-9]*$/),
  ...newPet(client),
});

describe('Apollo Client (@apollo/client 4, HttpLink with its default fetch)', () => {
  const client = () =>
    new ApolloClient({
      link: new HttpLink({ uri: `${t.url}/graphql`, headers: { Authorization: `Bearer ${t.apiKey}` } }),
      cache: new InMemoryCache(),
    });

  test('when createPet and then pets are run with the default settings, then both succeed (POST application/json)', async () => {
    const apollo = client();
    const { result, sent } = await watchingFetch(async () => {
      const created = await apollo.mutate<{ createPet: Pet }>({ mutation: CREATE, variables: { input: newPet('apollo') } });
      const listed = await apollo.query<{ pets: Pet[] }>({ query: PETS, variables: { limit: 5 } });
      return { created: created.data?.createPet, listed: listed.data?.pets };
    });
    expect(result.created).toEqual(asReturned('apollo', 'Pet'));
    expect(result.listed).toEqual([result.created]);
    expect(sent.map(({ method, headers }) => [method, headers['content-type']])).toEqual([
      ['POST', 'application/json'],
      ['POST', 'application/json'],
    ]);
    expect(await countPets(t)).toBe(1);
  });

  const PAGE = gql`
    query Page($first: Int, $after: String) {
      petsConnection(first: $first, after: $after) {
        edges {
          cursor
          node {
            id
            name
            categoryId
            status
          }
        }
        pageInfo {
          hasNextPage
          hasPreviousPage
          startCursor
          endCursor
        }
      }
    }
  `;

  test('when a page of 100 is read through pets and petsConnection with the default cache (`__typename` added at every level), then each fits one operation and `__typename` costs nothing', async () => {
    await seedPets(t.dataSource, 101);
    // The price each answer states (extensions.cost), seen by a link in front of HttpLink.
    const prices: unknown[] = [];
    const watchPrices = new ApolloLink((operation, forward) =>
      forward(operation).pipe(
        map((result) => {
          prices.push(result.extensions?.cost);
          return result;
        }),
      ),
    );
    const apollo = new ApolloClient({
      link: ApolloLink.from([watchPrices, new HttpLink({ uri: `${t.url}/graphql`, headers: { Authorization: `Bearer ${t.apiKey}` } })]),
      cache: new InMemoryCache(),
    });
    const connection = await apollo.query<{ petsConnection: { __typename: string; edges: unknown[]; pageInfo: { hasNextPage: boolean } } }>({
      query: PAGE,
      variables: { first: 100 },
    });
    const list = await apollo.query<{ pets: Array<{ __typename: string }> }>({ query: PETS, variables: { limit: 100 } });
    expect(connection.data?.petsConnection).toMatchObject({ __typename: 'PetConnection', pageInfo: { __typename: 'PageInfo', hasNextPage: true } });
    expect(connection.data?.petsConnection.edges).toHaveLength(100);
    expect(list.data?.pets).toHaveLength(100);
    expect(list.data?.pets[0].__typename).toBe('Pet');
    // What they cost without `__typename`: 100 × (edges, cursor, node, 4 fields) + pageInfo and its 4 once, 100 × 4 fields.
    expect(prices).toEqual([
      { requestedQueryCost: 705, maximumQueryCost: 1000, rateLimitUnits: 1 },
      { requestedQueryCost: 400, maximumQueryCost: 1000, rateLimitUnits: 1 },
    ]);
  });
});

describe('urql (@urql/core 6, createClient with its defaults)', () => {
  const client = () =>
    createClient({
      url: `${t.url}/graphql`,
      exchanges: [cacheExchange, fetchExchange],
      fetchOptions: { headers: { Authorization: `Bearer ${t.apiKey}` } },
    });

  test('when createPet and then pets are run, then both succeed: the query as a GET with no Content-Type', async () => {
    const urql = client();
    const { result, sent } = await watchingFetch(async () => {
      const created = await urql.mutation<{ createPet: Pet }>(CREATE, { input: newPet('urql') }).toPromise();
      const listed = await urql.query<{ pets: Pet[] }>(PETS, { limit: 5 }).toPromise();
      return { created, listed };
    });
    expect(result.created.error).toBeUndefined();
    expect(result.listed.error).toBeUndefined();
    expect(result.created.data?.createPet).toEqual(asReturned('urql', 'Pet'));
    expect(result.listed.data?.pets).toEqual([result.created.data?.createPet]);
    // urql's default (preferGetMethod 'within-url-limit'): queries go as GET, with Authorization and Accept only.
    expect(sent.map(({ method }) => method)).toEqual(['POST', 'GET']);
    const get = sent[1];
    expect(get.headers['content-type']).toBeUndefined();
    expect(get.headers['apollo-require-preflight']).toBeUndefined();
    expect(get.headers.authorization).toBe(`Bearer ${t.apiKey}`);
    expect(new URL(get.url).searchParams.get('query')).toContain('pets(limit: $limit)');
    expect(await countPets(t)).toBe(1);
  });
});

describe('graphql-request 7 (GraphQLClient)', () => {
  test.each(['POST', 'GET'] as const)(
    'when createPet and then pets are run with method %s, then both succeed (the mutation is always a POST)',
    async (method) => {
      const client = new GraphQLClient(`${t.url}/graphql`, {
        headers: { Authorization: `Bearer ${t.apiKey}` },
        ...(method === 'GET' && { method: 'GET' as const }),
      });
      const { result, sent } = await watchingFetch(async () => {
        const created = await client.request<{ createPet: Pet }>(CREATE, { input: newPet(`graphql-request ${method}`) });
        const listed = await client.request<{ pets: Pet[] }>(PETS, { limit: 5 });
        return { created: created.createPet, listed: listed.pets };
      });
      expect(result.created).toEqual(asReturned(`graphql-request ${method}`));
      expect(result.listed).toEqual([result.created]);
      expect(sent.map((request) => request.method)).toEqual(['POST', method]);
      if (method === 'GET') expect(sent[1].headers['content-type']).toBeUndefined();
      expect(await countPets(t)).toBe(1);
    },
  );
});

describe('CSRF: what a cross-site page can make a browser send runs nothing', () => {
  const mutation = 'mutation { createPet(input: { name: "Forged", categoryId: 1 }) { id } }';
  const getMutation = `/graphql?query=${encodeURIComponent(mutation)}`;
  const getQuery = `/graphql?query=${encodeURIComponent('{ pets { id name } }')}`;

  /** A 401 in the GraphQL error shape, with the Bearer challenge, and no pet stored. */
  async function expectRefusedUnauthenticated(result: Awaited<ReturnType<typeof request>>) {
    expect(result.status).toBe(401);
    expect(result.headers.get('www-authenticate')).toMatch(/^Bearer realm="pet-store"/);
    expect(answerOf(result.body)).toEqual({ errors: [{ message: expect.any(String), extensions: { code: 'UNAUTHENTICATED' } }] });
    expect(await countPets(t)).toBe(0);
  }

  test.each<[string, string, Record<string, string>]>([
    ['a mutation as a GET (a link, an <img>), no Authorization', getMutation, {}],
    ['a mutation as a GET with a cookie only', getMutation, { cookie: 'session=abc' }],
    ['a mutation as a GET with the HTTP Basic credentials a browser may remember', getMutation, { authorization: 'Basic dXNlcjpwYXNz' }],
    ['a query as a GET from another origin, no Authorization', getQuery, { origin: 'https://evil.example' }],
    ['a query as a GET with a form Content-Type, no Authorization', getQuery, { 'content-type': 'application/x-www-form-urlencoded' }],
  ])('when %s, then 401 UNAUTHENTICATED and nothing runs', async (_case, path, headers) => {
    const result = await request(t, 'GET', path, { apiKey: null, headers });
    await expectRefusedUnauthenticated(result);
    expect(result.headers.get('access-control-allow-origin')).toBeNull();
  });

  test.each<[string, string, string]>([
    ['text/plain (a form with enctype text/plain)', 'text/plain', JSON.stringify({ query: mutation })],
    ['application/x-www-form-urlencoded (a plain form)', 'application/x-www-form-urlencoded', `query=${encodeURIComponent(mutation)}`],
    ['multipart/form-data', 'multipart/form-data; boundary=x', `--x\r\nContent-Disposition: form-data; name="query"\r\n\r\n${mutation}\r\n--x--\r\n`],
    ['application/json with a cookie only (needs a preflight, which CORS refuses)', 'application/json', JSON.stringify({ query: mutation })],
  ])('when a POST of %s carries no Authorization, then 401 UNAUTHENTICATED and no pet is created', async (_case, contentType, body) => {
    const result = await request(t, 'POST', '/graphql', { apiKey: null, body, headers: { 'content-type': contentType, cookie: 'session=abc' } });
    await expectRefusedUnauthenticated(result);
  });

  test('when a simple-form POST carries a valid key, then it is still refused (415) and no pet is created', async () => {
    const result = await request(t, 'POST', '/graphql', { body: JSON.stringify({ query: mutation }), headers: { 'content-type': 'text/plain' } });
    expect(result.status).toBe(415);
    expect(result.body.errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(await countPets(t)).toBe(0);
  });

  test('when a mutation is sent as a GET with a valid key, then 405 and no pet is created', async () => {
    const result = await request(t, 'GET', getMutation);
    expect(result.status).toBe(405);
    expect(result.body.errors[0].extensions.code).toBe('METHOD_NOT_ALLOWED');
    expect(await countPets(t)).toBe(0);
  });

  test("when Apollo's CSRF prevention is read, then it keeps Apollo's two headers and adds Authorization", () => {
    expect([...CSRF_PREVENTION.requestHeaders].sort()).toEqual(['apollo-require-preflight', 'authorization', 'x-apollo-operation-name']);
  });
});

describe('CSRF and CORS agree', () => {
  let cors: TestApp;
  beforeAll(async () => {
    cors = await startTestApp({ env: { CORS_ORIGINS: 'https://app.example.com' } });
  });
  afterAll(() => cors.close());

  test('when a listed origin preflights a GraphQL GET with each header CSRF prevention accepts, then CORS allows them all', async () => {
    const preflight = await request(cors, 'OPTIONS', '/graphql', {
      apiKey: null,
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'GET',
        'access-control-request-headers': CSRF_PREVENTION.requestHeaders.join(','),
      },
    });
    expect(preflight.status).toBe(204);
    const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/);
    for (const header of CSRF_PREVENTION.requestHeaders) expect(allowed).toContain(header);
  });

  test('when a listed origin sends a GET query with only its key, as urql does, then it runs and the answer names the origin', async () => {
    const result = await request(cors, 'GET', `/graphql?query=${encodeURIComponent('{ pets { id } }')}`, { headers: { origin: 'https://app.example.com' } });
    expect(result.status).toBe(200);
    expect(answerOf(result.body)).toEqual({ data: { pets: [] } });
    expect(result.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
  });
});
