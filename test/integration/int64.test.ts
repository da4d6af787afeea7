import { toSafeInteger } from '../../src/database/int64';
import { request, startTestApp, type TestApp } from '../helpers/test-app';

describe('toSafeInteger', () => {
  test.each([
    ['1', 1],
    [1, 1],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
    [9007199254740991, Number.MAX_SAFE_INTEGER],
  ])('when given %p, then %p', (value, expected) => {
    expect(toSafeInteger(value)).toBe(expected);
  });

  test.each(['9007199254740992', '9007199254740993', '18446744073709551615', 9007199254740992, 1.5, '1.5', 'abc'])(
    'when given %p, then RangeError instead of a rounded number',
    (value) => {
      expect(() => toSafeInteger(value)).toThrow(RangeError);
    },
  );
});

describe('int64 through the database', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  test('when a row has id and categoryId 2^53-1, then REST sends them as exact JSON integers', async () => {
    await t.dataSource.query("INSERT INTO pet (id, name, category_id, status) VALUES (9007199254740991, 'Big', 9007199254740991, 'sold')");
    const result = await request(t, 'GET', '/v1/pets/9007199254740991');
    expect(result.status).toBe(200);
    expect(result.body).toEqual({ id: 9007199254740991, name: 'Big', categoryId: 9007199254740991, status: 'sold' });
  });

  test('when a row holds an int64 beyond 2^53-1, then 500 rather than a silently rounded number', async () => {
    await t.dataSource.query("INSERT INTO pet (id, name, category_id, status) VALUES (1, 'Huge', 9007199254740993, 'sold')");
    const result = await request(t, 'GET', '/v1/pets?limit=100');
    expect(result.status).toBe(500);
    expect(JSON.stringify(result.body)).not.toMatch(/900719925474099/);
  });
});

describe('numbers a JavaScript number cannot hold, as clients send them', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  /** POSTs a raw JSON body, so that the number reaches the server as written. */
  const post = (path: string, body: string) => request(t, 'POST', path, { body, headers: { 'content-type': 'application/json' } });
  const createWith = (categoryId: string) =>
    post('/graphql', `{"query": "mutation ($c: SafeInt!) { createPet(input: {name: \\"Rex\\", categoryId: $c}) { id } }", "variables": {"c": ${categoryId}}}`);

  test.each([
    [
      'an ID variable of 2^53+1',
      '{"query": "query ($id: ID!) { pet(id: $id) { id } }", "variables": {"id": 9007199254740993}}',
      'Variable "$id" got invalid value 9007199254740993; ID cannot represent value: 9007199254740993',
    ],
    [
      'an Int variable of 1e400',
      '{"query": "query ($n: Int) { pets(limit: $n) { id } }", "variables": {"n": 1e400}}',
      'Variable "$n" got invalid value 1e400; Int cannot represent non-integer value: 1e400',
    ],
  ])('when GraphQL gets %s, then its message shows the number as sent, no library object', async (_case, body, message) => {
    const result = await post('/graphql', body);
    expect(result.body.errors).toEqual([expect.objectContaining({ message, extensions: { code: 'BAD_USER_INPUT' } })]);
  });

  test.each(['9007199254740992', '9007199254740993', '-9007199254740993'])(
    'when a SafeInt variable is the integer %s, then it is refused as an unsafe integer, not a non-integer, over GraphQL and REST',
    async (categoryId) => {
      const graphql = await createWith(categoryId);
      expect(graphql.body.errors).toEqual([
        expect.objectContaining({
          message: `Variable "$c" got invalid value ${categoryId}; SafeInt cannot represent unsafe integer value: ${categoryId}`,
          extensions: { code: 'BAD_USER_INPUT' },
        }),
      ]);
      const rest = await post('/v1/pets', `{"name": "Rex", "categoryId": ${categoryId}}`);
      expect(rest.body).toEqual({ code: 'BAD_USER_INPUT', message: 'Invalid input: categoryId must be an integer from 1 to 9007199254740991.', status: 400 });
    },
  );

  test('when a SafeInt variable has a fraction a double would round away, then it is still a non-integer', async () => {
    const graphql = await createWith('1.0000000000000001');
    expect(graphql.body.errors[0].message).toBe(
      'Variable "$c" got invalid value 1.0000000000000001; SafeInt cannot represent non-integer value: 1.0000000000000001',
    );
  });
});
