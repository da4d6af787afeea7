import { setTimeout as sleep } from 'node:timers/promises';
import { IdempotencyRecord } from '../../src/idempotency/idempotency-record.entity';
import { IdempotencyService } from '../../src/idempotency/idempotency.service';
import { FEED_STATEMENT, STAMP_TRANSACTION, countStatements } from '../helpers/statement-counter';
import { countPets, graphql, request, startTestApp, type TestApp } from '../helpers/test-app';
import { IDEMPOTENCY_LIMITS } from '../../src/limits';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());
beforeEach(async () => {
  await t.clearPets();
  await t.dataSource.getRepository(IdempotencyRecord).clear();
});

const CREATE = 'mutation($input: NewPetInput!) { createPet(input: $input) { id name } }';

const post = (key: string, body: object = { name: 'Rex', categoryId: 1 }, apiKey?: string) =>
  request(t, 'POST', '/v1/pets', { body, headers: { 'idempotency-key': key }, apiKey });

describe('Idempotency-Key on POST /v1/pets', () => {
  test('when the same key and body are sent twice, then the first response is replayed and one pet exists', async () => {
    const first = await post('order-1');
    const again = await post('order-1');
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(await countPets(t)).toBe(1);
    // Stripe's header: the client can tell the replay from the create.
    expect([first.headers.get('idempotent-replayed'), again.headers.get('idempotent-replayed')]).toEqual(['false', 'true']);
  });

  test('when a create carries no Idempotency-Key, then its answer has no Idempotent-Replayed header', async () => {
    const created = await request(t, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } });
    expect([created.status, created.headers.get('idempotent-replayed')]).toEqual([201, null]);
  });

  test('when the same key comes with another body, then 422 IDEMPOTENCY_KEY_REUSED and nothing more is stored', async () => {
    await post('order-2');
    const other = await post('order-2', { name: 'Tom', categoryId: 1 });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await countPets(t)).toBe(1);
  });

  test('when the same body is written with its keys in another order, then it is the same request', async () => {
    await post('order-3', { name: 'Rex', categoryId: 1 });
    expect((await post('order-3', { categoryId: 1, name: 'Rex', status: 'available' })).status).toBe(201);
    expect(await countPets(t)).toBe(1);
  });

  test('when an in-flight request with the same body is under way, then 409, and after it was abandoned, the retry creates one pet', async () => {
    const service = new IdempotencyService(t.database);
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    const apiKey = await t.apiKeys.authentication.findActive(t.apiKey);
    const input = { name: 'Rex', categoryId: 1, status: 'available' };
    const slow = service.once(
      { apiKeyId: apiKey!.id, key: 'order-5' },
      input,
      async () => {
        await blocked;
        throw new Error('connection cut');
      },
      async () => null,
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    const during = await post('order-5', input);
    expect(during.status).toBe(409);
    expect(during.body.code).toBe('IDEMPOTENCY_KEY_IN_USE');
    release();
    await expect(slow).rejects.toThrow('connection cut');
    const retry = await post('order-5', input);
    expect(retry.status).toBe(201);
    expect(await post('order-5', input)).toMatchObject({ status: 201, body: retry.body });
    expect(await countPets(t)).toBe(1);
  });

  test('when a request was abandoned long ago without finishing, then a retry takes the key over', async () => {
    const apiKey = await t.apiKeys.authentication.findActive(t.apiKey);
    const input = { name: 'Rex', categoryId: 1, status: 'available' };
    await new IdempotencyService(t.database)
      .once(
        { apiKeyId: apiKey!.id, key: 'order-6' },
        input,
        async (m) => {
          await m.query('SELECT 1');
          throw new Error('cut');
        },
        async () => null,
      )
      .catch(() => undefined);
    await t.dataSource.getRepository(IdempotencyRecord).insert({
      apiKeyId: apiKey!.id,
      key: 'order-6b',
      requestHash: 'h'.repeat(64),
      petId: null,
      createdAt: new Date(Date.now() - IDEMPOTENCY_LIMITS.abandonedAfterMs - 1000),
    });
    const result = await post('order-6b', input);
    expect(result.status).toBe(201);
    expect(await countPets(t)).toBe(1);
  });

  test('when two API keys use the same Idempotency-Key, then each gets its own pet', async () => {
    const { key } = await t.apiKeys.create('second');
    await post('shared');
    await post('shared', undefined, key);
    expect(await countPets(t)).toBe(2);
  });

  test.each(['', 'x'.repeat(256), 'tab\there'])('when the key is %p, then 400 BAD_USER_INPUT', async (key) => {
    const result = await post(key);
    expect(result.status).toBe(400);
    expect(result.body).toMatchObject({ code: 'BAD_USER_INPUT', message: expect.stringContaining('Idempotency-Key must be 1 to 255 printable ASCII') });
    expect(await countPets(t)).toBe(0);
  });

  test('when any guarded request carries a malformed key, then the guard refuses it with 400 before the operation runs', async () => {
    const list = await request(t, 'GET', '/v1/pets', { headers: { 'idempotency-key': 'tab\there' } });
    expect(list.status).toBe(400);
    expect(list.body.code).toBe('BAD_USER_INPUT');
  });

  test('when a key is older than 24 hours, then it is purged and can be used again', async () => {
    await post('old');
    await t.dataSource.getRepository(IdempotencyRecord).update({ key: 'old' }, { createdAt: new Date(Date.now() - IDEMPOTENCY_LIMITS.retentionMs - 1000) });
    expect(await new IdempotencyService(t.database).purgeExpired()).toBe(1);
    await post('old', { name: 'Other', categoryId: 2 });
    expect(await countPets(t)).toBe(2);
  });
});

describe('Idempotency-Key on createPet (GraphQL)', () => {
  const send = (key: string, input: object) =>
    request(t, 'POST', '/graphql', { body: { query: CREATE, variables: { input } }, headers: { 'idempotency-key': key } });

  test('when the same key and input are sent twice, then the same pet comes back and one exists', async () => {
    const first = await send('g-1', { name: 'Rex', categoryId: 1 });
    const again = await send('g-1', { name: 'Rex', categoryId: 1 });
    expect(again.body.data.createPet).toEqual(first.body.data.createPet);
    expect(await countPets(t)).toBe(1);
  });

  test('when the same key comes with other input, then IDEMPOTENCY_KEY_REUSED', async () => {
    await send('g-2', { name: 'Rex', categoryId: 1 });
    const other = await send('g-2', { name: 'Tom', categoryId: 1 });
    expect(other.body.errors[0].extensions.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await countPets(t)).toBe(1);
  });

  test('when the key is malformed, then 400 BAD_USER_INPUT in the GraphQL shape and no pet', async () => {
    const result = await send('x'.repeat(256), { name: 'Rex', categoryId: 1 });
    expect(result.status).toBe(400);
    expect(result.body.errors).toEqual([{ message: expect.stringContaining('Idempotency-Key'), extensions: { code: 'BAD_USER_INPUT' } }]);
    expect(await countPets(t)).toBe(0);
  });

  test('when no key is sent, then every create makes a pet', async () => {
    await graphql(t, CREATE, { input: { name: 'Rex', categoryId: 1 } });
    await graphql(t, CREATE, { input: { name: 'Rex', categoryId: 1 } });
    expect(await countPets(t)).toBe(2);
  });
});

describe('the statements of a create (docs/failures.md "503 or 504 on a create")', () => {
  test.each(['REST', 'GraphQL'])(
    'when %s creates without a key, then the create is one statement, an INSERT that commits itself; with a key, its INSERT commits in a transaction',
    async (surface) => {
      const create = (key?: string) =>
        surface === 'REST'
          ? request(t, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 }, headers: key ? { 'idempotency-key': key } : {} })
          : request(t, 'POST', '/graphql', {
              body: { query: CREATE, variables: { input: { name: 'Rex', categoryId: 1 } } },
              headers: key ? { 'idempotency-key': key } : {},
            });
      // The feed's sequencer stamps each new pet in a transaction of its own, on its own schedule: its statements
      // (and their START and COMMIT) are told apart, once it has stamped every pet.
      const [FEED, STAMP] = [FEED_STATEMENT, STAMP_TRANSACTION];
      const stamped = async () => {
        for (let tries = 0; Number((await t.dataSource.query('SELECT COUNT(*) AS n FROM pet WHERE seq IS NULL'))[0].n) > 0; tries++) {
          if (tries > 200) throw new Error('the feed did not stamp the new pets');
          await sleep(10);
        }
      };
      expect((await create()).status).toBeLessThan(300); // the API key is looked up here, then cached
      await stamped();
      const statements = countStatements(t.dataSource);
      expect((await create()).status).toBeLessThan(300);
      await stamped();
      const transactions = (pattern: RegExp) => statements.count(pattern) - statements.count(STAMP);
      // sql.js reads the new id in its own process (TypeORM's `SELECT last_insert_rowid()`): no round trip.
      const sent = statements.count() - statements.count(/^SELECT last_insert_rowid\(\)$/) - statements.count(FEED) - 2 * statements.count(STAMP);
      expect([sent, statements.count(/^INSERT INTO [`"]pet[`"]/)]).toEqual([1, 1]);
      statements.reset();
      expect((await create(`one-trip-${surface}`)).status).toBeLessThan(300);
      await stamped();
      expect([statements.count(/^INSERT INTO [`"]pet[`"]/), transactions(/^(START|BEGIN) TRANSACTION$/), transactions(/^COMMIT$/)]).toEqual([1, 1, 1]);
    },
  );
});
