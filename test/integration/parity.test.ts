import type { ErrorCode } from '../../src/errors/error-catalogue';
import { countPets, createPet, graphql, request, startTestApp, type TestApp } from '../helpers/test-app';

/**
 * One scenario table, run through REST and through GraphQL: both surfaces must give the
 * same data and the same error code. GraphQL's `pet: null` counts as NOT_FOUND (REST's 404).
 */
type Operation = { op: 'list'; limit?: number; status?: string } | { op: 'get'; id: string } | { op: 'create'; input: Record<string, unknown> };

type Outcome = { data: unknown } | { code: string };

let t: TestApp;
const seeded: Array<Record<string, unknown>> = [];

beforeAll(async () => {
  t = await startTestApp();
  for (const [name, status] of [
    ['Rex', 'available'],
    ['Tom', 'sold'],
    ['Kit', 'pending'],
    ['Max', 'sold'],
  ]) {
    seeded.push(await createPet(t, { name, status, categoryId: 7 }));
  }
});
afterAll(() => t.close());

const normalise = (pet: any) => pet && { ...pet, id: Number(pet.id) };

async function viaRest(operation: Operation, apiKey?: string | null): Promise<Outcome> {
  let result;
  if (operation.op === 'list') {
    const query = new URLSearchParams();
    if (operation.limit !== undefined) query.set('limit', String(operation.limit));
    if (operation.status !== undefined) query.set('status', String(operation.status));
    result = await request(t, 'GET', `/v1/pets?${query.toString()}`, { apiKey });
  } else if (operation.op === 'get') {
    result = await request(t, 'GET', `/v1/pets/${encodeURIComponent(operation.id)}`, { apiKey });
  } else {
    result = await request(t, 'POST', '/v1/pets', { body: operation.input, apiKey });
  }
  if (result.status >= 400) {
    expect(result.body.status).toBe(result.status);
    return { code: result.body.code };
  }
  return { data: Array.isArray(result.body) ? result.body.map(normalise) : normalise(result.body) };
}

async function viaGraphql(operation: Operation, apiKey?: string | null): Promise<Outcome> {
  const fields = '{ id name categoryId status }';
  let result;
  if (operation.op === 'list') {
    const variables = { limit: operation.limit, status: operation.status };
    result = await graphql(t, `query($limit: Int, $status: PetStatus) { pets(limit: $limit, status: $status) ${fields} }`, variables, { apiKey });
  } else if (operation.op === 'get') {
    result = await graphql(t, `query($id: ID!) { pet(id: $id) ${fields} }`, { id: operation.id }, { apiKey });
  } else {
    result = await graphql(t, `mutation($input: NewPetInput!) { createPet(input: $input) ${fields} }`, { input: operation.input }, { apiKey });
  }
  if (result.body.errors) return { code: result.body.errors[0].extensions.code };
  const data = Object.values(result.body.data)[0];
  if (data === null) return { code: 'NOT_FOUND' };
  return { data: Array.isArray(data) ? data.map(normalise) : normalise(data) };
}

const withoutId = (outcome: Outcome) => ('data' in outcome ? { data: { ...(outcome.data as object), id: 'assigned' } } : outcome);

const scenarios: Array<[string, Operation, 'data' | ErrorCode]> = [
  ['list with defaults', { op: 'list' }, 'data'],
  ['list with limit 2', { op: 'list', limit: 2 }, 'data'],
  ['list by status sold', { op: 'list', status: 'sold' }, 'data'],
  ['list with limit 0', { op: 'list', limit: 0 }, 'BAD_USER_INPUT'],
  ['list with limit 101', { op: 'list', limit: 101 }, 'BAD_USER_INPUT'],
  ['list by an unknown status', { op: 'list', status: 'lost' }, 'BAD_USER_INPUT'],
  ['get an existing pet', { op: 'get', id: 'SEEDED' }, 'data'],
  ['get a missing pet', { op: 'get', id: '987654321' }, 'NOT_FOUND'],
  ['get a non-numeric id', { op: 'get', id: 'abc' }, 'BAD_USER_INPUT'],
  ['get an id beyond 2^53-1', { op: 'get', id: '9007199254740993' }, 'BAD_USER_INPUT'],
  ['create a valid pet', { op: 'create', input: { name: 'Bo', categoryId: 2, status: 'sold' } }, 'data'],
  ['create without status', { op: 'create', input: { name: 'Bo', categoryId: 2 } }, 'data'],
  ['create without name', { op: 'create', input: { categoryId: 2 } }, 'BAD_USER_INPUT'],
  ['create with categoryId "7"', { op: 'create', input: { name: 'Bo', categoryId: '7' } }, 'BAD_USER_INPUT'],
  ['create with categoryId 1.5', { op: 'create', input: { name: 'Bo', categoryId: 1.5 } }, 'BAD_USER_INPUT'],
  ['create with categoryId 2^53', { op: 'create', input: { name: 'Bo', categoryId: 2 ** 53 } }, 'BAD_USER_INPUT'],
  ['create with a blank name', { op: 'create', input: { name: ' ', categoryId: 2 } }, 'BAD_USER_INPUT'],
  ['create with a long name', { op: 'create', input: { name: 'x'.repeat(101), categoryId: 2 } }, 'BAD_USER_INPUT'],
  ['create with an unknown status', { op: 'create', input: { name: 'Bo', categoryId: 2, status: 'lost' } }, 'BAD_USER_INPUT'],
  ['create with an id', { op: 'create', input: { id: 9, name: 'Bo', categoryId: 2 } }, 'BAD_USER_INPUT'],
];

describe.each(scenarios)('%s', (_name, scenario, expected) => {
  test(`when sent through REST and GraphQL, then both give ${expected === 'data' ? 'the same data' : expected}`, async () => {
    const operation = scenario.op === 'get' && scenario.id === 'SEEDED' ? { ...scenario, id: String(seeded[1].id) } : scenario;
    const before = await countPets(t);
    let rest = await viaRest(operation);
    let gql = await viaGraphql(operation);
    if (operation.op === 'create') {
      expect(await countPets(t)).toBe(before + (expected === 'data' ? 2 : 0));
      [rest, gql] = [withoutId(rest), withoutId(gql)];
    }
    expect(rest).toEqual(gql);
    if (expected === 'data') expect(rest).toHaveProperty('data');
    else expect(rest).toEqual({ code: expected });
  });
});

describe('without an API key', () => {
  test.each<[string, Operation]>([
    ['list', { op: 'list' }],
    ['get', { op: 'get', id: '1' }],
    ['create', { op: 'create', input: { name: 'Bo', categoryId: 2 } }],
  ])('when %s is sent through both surfaces, then both say UNAUTHENTICATED', async (_name, operation) => {
    expect(await viaRest(operation, null)).toEqual({ code: 'UNAUTHENTICATED' });
    expect(await viaGraphql(operation, null)).toEqual({ code: 'UNAUTHENTICATED' });
  });
});
