import { toSafeInteger } from '../src/database/int64';
import { request, startTestApp, type TestApp } from './helpers/test-app';

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
