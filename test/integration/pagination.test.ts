import { decodePetCursor, encodePetCursor } from '../../src/pets/pet-cursor';
import { PetStatus } from '../../src/pets/pet-status.enum';
import { PetRepository } from '../../src/pets/pet.repository';
import { seedPets } from '../../src/pets/pet.seed';
import { EXPECTED_DRIVER } from '../helpers/test-database';
import { type TestApp, countPets, createPet, graphql, request, startTestApp } from '../helpers/test-app';

/**
 * docs/pagination.md: every pet is reachable, a page at a time, on both surfaces, with the
 * same opaque cursors; keyset pages stay exact while other clients create pets.
 */
const SEEDED = 1050;

let target: TestApp;
/** Every pet stored before the walks, by id, in ascending order. */
let seeded: Array<{ id: number; status: PetStatus }>;

beforeAll(async () => {
  target = await startTestApp();
  await seedPets(target.dataSource, SEEDED);
  const all = await target.dataSource.query<Array<{ id: string | number; status: PetStatus }>>('SELECT id, status FROM pet ORDER BY id');
  seeded = all.map(({ id, status }) => ({ id: Number(id), status }));
});

afterAll(() => target.close());

/** The `after` cursor in a `Link: <…>; rel="next"` header, and the whole URL. */
function nextLink(link: string | null): { url: string; after: string } | undefined {
  if (link === null) return undefined;
  const match = /^<([^>]+)>; rel="next"$/.exec(link);
  if (!match) throw new Error(`Unexpected Link header: ${link}`);
  return { url: match[1], after: new URL(match[1], 'http://origin.invalid').searchParams.get('after') ?? '' };
}

/** Follows REST `Link` headers from `path` to the last page; `onPage` runs after each page. */
async function walkRest(path: string, onPage: () => Promise<void> = async () => {}): Promise<{ ids: number[]; pages: number }> {
  const ids: number[] = [];
  let pages = 0;
  for (let url: string | undefined = path; url !== undefined;) {
    const response = await request(target, 'GET', url);
    expect(response.status).toBe(200);
    ids.push(...(response.body as Array<{ id: number }>).map((pet) => pet.id));
    pages += 1;
    url = nextLink(response.headers.get('link'))?.url;
    await onPage();
  }
  return { ids, pages };
}

const CONNECTION = `query Page($first: Int, $after: String, $status: PetStatus) {
  petsConnection(first: $first, after: $after, status: $status) {
    edges { cursor node { id status } }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
  }
}`;

/** Follows `pageInfo.endCursor` to the last page of `petsConnection`. */
async function walkConnection(variables: { first?: number; status?: PetStatus }, onPage: () => Promise<void> = async () => {}) {
  const ids: number[] = [];
  let after: string | undefined;
  for (;;) {
    const response = await graphql(target, CONNECTION, { ...variables, after });
    expect(response.body.errors).toBeUndefined();
    const { edges, pageInfo } = response.body.data.petsConnection;
    ids.push(...edges.map((edge: { node: { id: string } }) => Number(edge.node.id)));
    expect(pageInfo.hasPreviousPage).toBe(after !== undefined);
    expect(pageInfo.endCursor).toBe(edges.at(-1)?.cursor ?? null);
    await onPage();
    if (!pageInfo.hasNextPage) return ids;
    after = pageInfo.endCursor;
  }
}

function expectEachOnceInOrder(ids: number[], expected: number[]): void {
  expect(ids).toEqual([...ids].sort((a, b) => a - b));
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids.filter((id) => expected.includes(id))).toEqual(expected);
}

describe('walking every page', () => {
  const FILTERS: Array<PetStatus | undefined> = [undefined, PetStatus.available, PetStatus.sold];

  test.each(FILTERS)('REST, status %s: the Link headers lead through every matching pet exactly once, in ascending id order', async (status) => {
    const expected = seeded.filter((pet) => !status || pet.status === status).map((pet) => pet.id);
    const { ids, pages } = await walkRest(`/v1/pets?limit=100${status ? `&status=${status}` : ''}`);
    expect(ids).toEqual(expected);
    expect(pages).toBe(Math.max(1, Math.ceil(expected.length / 100)));
  });

  test.each(FILTERS)('GraphQL connection, status %s: pageInfo leads through every matching pet exactly once', async (status) => {
    const expected = seeded.filter((pet) => !status || pet.status === status).map((pet) => pet.id);
    expect(await walkConnection({ first: 100, status })).toEqual(expected);
  });

  test('GraphQL pets(after:) walks with the same cursors', async () => {
    const ids: number[] = [];
    let after: string | null = null;
    do {
      const page = await graphql(target, 'query($after: String) { pets(limit: 100, after: $after) { id } }', { after });
      const pets: Array<{ id: string }> = page.body.data.pets;
      ids.push(...pets.map((pet) => Number(pet.id)));
      after = pets.length === 100 ? encodePetCursor({ afterId: Number(pets[99].id) }) : null;
    } while (after !== null);
    expect(ids).toEqual(seeded.map((pet) => pet.id));
  });

  test('with the default limit, each Link keeps limit=20 and the walk takes ceil(n / 20) pages', async () => {
    const first = await request(target, 'GET', '/v1/pets?status=pending');
    const link = nextLink(first.headers.get('link'));
    expect(link?.url).toMatch(/^\/v1\/pets\?limit=20&status=pending&after=[A-Za-z0-9_-]+$/);
    const pending = seeded.filter((pet) => pet.status === PetStatus.pending).length;
    expect((await walkRest('/v1/pets?status=pending')).pages).toBe(Math.ceil(pending / 20));
  });

  test.each([
    ['REST, no filter', undefined, 'rest'],
    ['REST, status available', PetStatus.available, 'rest'],
    ['GraphQL, no filter', undefined, 'graphql'],
    ['GraphQL, status sold', PetStatus.sold, 'graphql'],
  ] as const)('%s: while others create pets, every earlier pet comes once and new ones only at the end', async (_name, status, surface) => {
    const expected = seeded.filter((pet) => !status || pet.status === status).map((pet) => pet.id);
    const created: number[] = [];
    // Meanwhile, another client creates pets through both surfaces, two at a time, up to 80:
    // new pets get higher ids, so they can only come after every seeded one.
    let walking = true;
    const creating = (async () => {
      for (let round = 0; walking && round < 40; round++) {
        const [a, b] = await Promise.all([
          createPet(target, { status: status ?? PetStatus.available }),
          graphql(target, 'mutation($s: PetStatus!) { createPet(input: {name: "New", categoryId: 2, status: $s}) { id } }', {
            s: status ?? PetStatus.pending,
          }),
        ]);
        created.push(a.id as number, Number(b.body.data.createPet.id));
      }
    })();
    const walk =
      surface === 'rest'
        ? walkRest(`/v1/pets?limit=50${status ? `&status=${status}` : ''}`).then((result) => result.ids)
        : walkConnection({ first: 50, status });
    const ids = await walk.finally(() => (walking = false));
    await creating;
    expectEachOnceInOrder(ids, expected);
    const extra = ids.filter((id) => !expected.includes(id));
    // Only pets created during the walk, each after every seeded one.
    expect(extra.every((id) => created.includes(id) && id > expected.at(-1)!)).toBe(true);
    // The creates did overlap the walk.
    expect(created.length).toBeGreaterThan(0);
    await target.dataSource.query(`DELETE FROM pet WHERE id > ${seeded.at(-1)!.id}`);
  });
});

describe('the pages themselves', () => {
  test('REST and GraphQL hand out the same cursor for the same page', async () => {
    const rest = await request(target, 'GET', '/v1/pets?limit=7&status=sold');
    const gql = await graphql(target, '{ petsConnection(first: 7, status: sold) { pageInfo { endCursor } } }');
    expect(nextLink(rest.headers.get('link'))?.after).toBe(gql.body.data.petsConnection.pageInfo.endCursor);
    // And each works on the other surface.
    const after = gql.body.data.petsConnection.pageInfo.endCursor as string;
    const second = await request(target, 'GET', `/v1/pets?limit=7&status=sold&after=${after}`);
    const secondGql = await graphql(target, 'query($a: String) { pets(limit: 7, status: sold, after: $a) { id } }', { a: after });
    expect(second.body.map((pet: { id: number }) => String(pet.id))).toEqual(secondGql.body.data.pets.map((pet: { id: string }) => pet.id));
  });

  test('a cursor is opaque, URL-safe and short', () => {
    const cursor = encodePetCursor({ status: PetStatus.available, afterId: Number.MAX_SAFE_INTEGER });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]{20,60}$/);
    expect(decodePetCursor(cursor)).toEqual({ status: PetStatus.available, afterId: Number.MAX_SAFE_INTEGER });
  });

  test('the last page has no Link, even when it is exactly full', async () => {
    const sold = seeded.filter((pet) => pet.status === PetStatus.sold);
    const cursor = encodePetCursor({ status: PetStatus.sold, afterId: sold.at(-6)!.id });
    const last = await request(target, 'GET', `/v1/pets?limit=5&status=sold&after=${cursor}`);
    expect(last.body).toHaveLength(5);
    expect(last.headers.get('link')).toBeNull();
    const gql = await graphql(target, 'query($a: String) { petsConnection(first: 5, status: sold, after: $a) { pageInfo { hasNextPage endCursor } } }', {
      a: cursor,
    });
    expect(gql.body.data.petsConnection.pageInfo).toEqual({
      hasNextPage: false,
      endCursor: encodePetCursor({ status: PetStatus.sold, afterId: sold.at(-1)!.id }),
    });
  });

  test('past the end: 200 with an empty page, no Link; the connection has null cursors', async () => {
    const cursor = encodePetCursor({ afterId: Number.MAX_SAFE_INTEGER });
    const rest = await request(target, 'GET', `/v1/pets?after=${cursor}`);
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual([]);
    expect(rest.headers.get('link')).toBeNull();
    const gql = await graphql(target, 'query($a: String) { petsConnection(after: $a) { edges { cursor } pageInfo { hasNextPage startCursor endCursor } } }', {
      a: cursor,
    });
    expect(gql.body.data.petsConnection).toEqual({ edges: [], pageInfo: { hasNextPage: false, startCursor: null, endCursor: null } });
  });

  test('GraphQL null for after and status means none, as clients send unset variables', async () => {
    const page = await graphql(target, 'query($a: String, $s: PetStatus) { petsConnection(first: 3, after: $a, status: $s) { edges { node { id } } } }', {
      a: null,
      s: null,
    });
    expect(page.body.errors).toBeUndefined();
    expect(page.body.data.petsConnection.edges.map((edge: { node: { id: string } }) => Number(edge.node.id))).toEqual(seeded.slice(0, 3).map((pet) => pet.id));
    const cursor = encodePetCursor({ afterId: seeded[0].id });
    const pets = await graphql(target, 'query($a: String) { pets(limit: 1, status: null, after: $a) { id } }', { a: cursor });
    expect(pets.body.data.pets).toEqual([{ id: String(seeded[1].id) }]);
  });

  test('HEAD carries the same Link as GET', async () => {
    const head = await request(target, 'HEAD', '/v1/pets?limit=3');
    const get = await request(target, 'GET', '/v1/pets?limit=3');
    expect(head.headers.get('link')).toBe(get.headers.get('link'));
    expect(head.headers.get('link')).not.toBeNull();
  });

  test('the connection defaults to first: 20, and first is bounded like limit', async () => {
    const page = await graphql(target, '{ petsConnection { edges { node { id } } } }');
    expect(page.body.data.petsConnection.edges).toHaveLength(20);
    for (const first of [0, 101]) {
      const refused = await graphql(target, `{ petsConnection(first: ${first}) { edges { cursor } } }`);
      expect(refused.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      expect(refused.body.errors[0].message).toMatch(/first must (not be (less|greater) than)/);
    }
  });

  test('the connection is priced like pets: one full page with every pageInfo field fits the cost limit, two do not', async () => {
    const page =
      'petsConnection(first: 100) { edges { cursor node { id name categoryId status } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }';
    const one = await graphql(target, `{ ${page} }`);
    expect(one.body.errors).toBeUndefined();
    const two = await graphql(target, `{ a: ${page} b: ${page} }`);
    expect(two.body.errors[0].message).toBe('Query cost 1,410 exceeds the maximum of 1,000.');
  });
});

test('a page is a range that starts at the cursor, on the primary key or on (status, id): never a scan from the first row', async () => {
  const { sql } = new PetRepository(target.database);
  const middle = seeded[500].id;
  if (EXPECTED_DRIVER === 'mysql') {
    const plan = async (statement: string, parameters: unknown[]) => (await target.dataSource.query(`EXPLAIN ${statement}`, parameters))[0];
    expect(await plan(sql.list, [middle, 21])).toMatchObject({ type: 'range', key: 'PRIMARY' });
    // Both key parts (status and id): 66 bytes would be a lookup on status alone, walked from its first row.
    const byStatus = await plan(sql.listByStatus, ['sold', middle, 21]);
    expect(byStatus).toMatchObject({ type: 'range', key: 'idx_pet_status_id' });
    expect(Number(byStatus.key_len)).toBeGreaterThan(66);
  } else {
    const plan = async (statement: string, parameters: unknown[]) =>
      (await target.dataSource.query<Array<{ detail: string }>>(`EXPLAIN QUERY PLAN ${statement}`, parameters)).map((row) => row.detail).join('; ');
    expect(await plan(sql.list, [middle, 21])).toMatch(/SEARCH pet USING INTEGER PRIMARY KEY \(rowid>\?\)/);
    expect(await plan(sql.listByStatus, ['sold', middle, 21])).toMatch(/SEARCH pet USING (COVERING )?INDEX idx_pet_status_id \(status=\? AND id>\?\)/);
  }
});

test('the OpenAPI document describes the after parameter and the Link header', async () => {
  const document = (await request(target, 'GET', '/v1/openapi.json', { apiKey: null })).body;
  const listPets = document.paths['/pets'].get;
  expect(listPets.parameters).toContainEqual(
    expect.objectContaining({ name: 'after', in: 'query', required: false, schema: expect.objectContaining({ type: 'string', maxLength: 100 }) }),
  );
  expect(listPets.responses['200'].headers.Link.description).toMatch(/^Only when more pets follow\. RFC 8288/);
});

describe('a cursor the service did not write, or for another list', () => {
  const real = () => encodePetCursor({ status: PetStatus.available, afterId: seeded[10].id });
  const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
  const reencoded = () => {
    // Decoded, its id changed, encoded again without the checksum: what a client might try.
    const bytes = Buffer.from(real(), 'base64url');
    const payload = bytes.subarray(0, -8).toString('latin1').replace(/\d+$/, '1');
    return Buffer.concat([Buffer.from(payload, 'latin1'), bytes.subarray(-8)]).toString('base64url');
  };
  const TAMPERED: Array<[string, () => string]> = [
    ['one character changed', () => flip(real(), 3)],
    ['its checksum changed', () => flip(real(), real().length - 2)],
    ['cut short', () => real().slice(0, -4)],
    ['its id rewritten', reencoded],
    ['made up', () => 'abc'],
    ['an id in plain text', () => '12'],
    ['with base64 padding', () => `${real()}=`],
    ['too long', () => 'A'.repeat(101)],
    ['empty', () => ''],
    ['not base64url', () => 'a+b/c'],
  ];

  test.each(TAMPERED)('REST, %s: 400 BAD_USER_INPUT, nothing listed', async (_name, cursor) => {
    const before = await countPets(target);
    const response = await request(target, 'GET', `/v1/pets?status=available&after=${encodeURIComponent(cursor())}`);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      code: 'BAD_USER_INPUT',
      status: 400,
      message: expect.stringMatching(/after must be a cursor from a previous page of this list, unchanged/),
    });
    expect(await countPets(target)).toBe(before);
  });

  test.each(TAMPERED)('GraphQL, %s: BAD_USER_INPUT on pets and petsConnection', async (_name, cursor) => {
    for (const query of [
      'query($a: String) { pets(status: available, after: $a) { id } }',
      'query($a: String) { petsConnection(status: available, after: $a) { edges { cursor } } }',
    ]) {
      const response = await graphql(target, query, { a: cursor() });
      expect(response.body.data).toBeNull();
      expect(response.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
      expect(response.body.errors[0].message).toMatch(/after must be a cursor/);
    }
  });

  test.each([
    [PetStatus.sold, PetStatus.available],
    [undefined, PetStatus.available],
    [PetStatus.pending, undefined],
  ])('a cursor of the list with status %s, used with status %s: 400 that says to keep the filter', async (from, to) => {
    const cursor = encodePetCursor({ status: from, afterId: seeded[0].id });
    const response = await request(target, 'GET', `/v1/pets?${to ? `status=${to}&` : ''}after=${cursor}`);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('BAD_USER_INPUT');
    expect(response.body.message).toMatch(/keep the filter while paging/);
    const gql = await graphql(target, 'query($s: PetStatus, $a: String) { petsConnection(status: $s, after: $a) { edges { cursor } } }', {
      s: to,
      a: cursor,
    });
    expect(gql.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  test('a cursor that is not a string (REST repeats the parameter): 400', async () => {
    const response = await request(target, 'GET', `/v1/pets?after=${real()}&after=${real()}`);
    expect(response.status).toBe(400);
    expect(response.body.code).toBe('BAD_USER_INPUT');
  });
});
