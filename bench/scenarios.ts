import type { Request } from 'autocannon';

/** Which surface a scenario exercises; the baselines serve REST only. */
export type Surface = 'rest' | 'graphql';

/** What scenarios need to build their requests. */
export interface ScenarioContext {
  /** A valid API key. */
  apiKey: string;
  /** A well-formed key (right shape, valid CRC-32 checksum) that is in no database. */
  badKey: string;
  /** Ids 1 to `petCount` exist (gets pick one at random). */
  petCount: number;
}

/** One load shape on one surface. */
export interface Scenario {
  /** Operation, the same name on both surfaces: `get`, `list-20`, …; the table's row key with `surface`. */
  name: string;
  surface: Surface;
  /** Every response must have one of these statuses; anything else is counted as unexpected. */
  expected: readonly number[];
  /** The autocannon request sequence, cycled by each connection. */
  requests: (context: ScenarioContext) => Request[];
}

const PET_FIELDS = '{ id name categoryId status }';
const NAMES = ['Bella', 'Max', 'Luna', 'Oscar', 'Milo', 'Coco', 'Rex', 'Tom'];
const pick = <T>(values: readonly T[]) => values[Math.floor(Math.random() * values.length)];
const randomId = (context: ScenarioContext) => 1 + Math.floor(Math.random() * context.petCount);
const newPet = () => ({ name: pick(NAMES), categoryId: 1 + Math.floor(Math.random() * 20), status: pick(['available', 'pending', 'sold']) });

function headers(key: string, json = false): Record<string, string> {
  return { authorization: `Bearer ${key}`, ...(json && { 'content-type': 'application/json' }) };
}

/** The REST request of an operation (`get`, `list-20`, `list-100`, `list-status`, `create`). */
function rest(operation: string, context: ScenarioContext, key = context.apiKey): Request {
  switch (operation) {
    case 'get':
      return { method: 'GET', path: '/v1/pets/1', headers: headers(key), setupRequest: (request) => ({ ...request, path: `/v1/pets/${randomId(context)}` }) };
    case 'create':
      return { method: 'POST', path: '/v1/pets', headers: headers(key, true), setupRequest: (request) => ({ ...request, body: JSON.stringify(newPet()) }) };
    default:
      return { method: 'GET', path: `/v1/pets${LIST_QUERIES[operation]}`, headers: headers(key) };
  }
}

/** The query string of each list operation. */
export const LIST_QUERIES: Record<string, string> = { 'list-20': '?limit=20', 'list-100': '?limit=100', 'list-status': '?status=pending&limit=20' };

const GRAPHQL_LISTS: Record<string, string> = {
  'list-20': `{ pets(limit: 20) ${PET_FIELDS} }`,
  'list-100': `{ pets(limit: 100) ${PET_FIELDS} }`,
  'list-status': `{ pets(status: pending, limit: 20) ${PET_FIELDS} }`,
};

const GRAPHQL_GET = `query Pet($id: ID!) { pet(id: $id) ${PET_FIELDS} }`;
const GRAPHQL_CREATE = `mutation Create($input: NewPetInput!) { createPet(input: $input) ${PET_FIELDS} }`;

/** One GraphQL document the scenarios send, as a trusted document manifest lists it. */
export interface GraphqlDocument {
  /** The scenario's operation (`get`, `list-20`, …). */
  name: string;
  type: 'query' | 'mutation';
  body: string;
}

/** Every GraphQL document the scenarios send, each once, in the exact text they send (its SHA-256 is its id). */
export const GRAPHQL_DOCUMENTS: readonly GraphqlDocument[] = [
  { name: 'get', type: 'query', body: GRAPHQL_GET },
  ...Object.entries(GRAPHQL_LISTS).map(([name, body]): GraphqlDocument => ({ name, type: 'query', body })),
  { name: 'create', type: 'mutation', body: GRAPHQL_CREATE },
];

/** The GraphQL request of the same operation: one POST /graphql. */
function graphql(operation: string, context: ScenarioContext, key = context.apiKey): Request {
  const post = (query: string, variables?: () => object): Request => ({
    method: 'POST',
    path: '/graphql',
    headers: headers(key, true),
    body: JSON.stringify({ query }),
    ...(variables && { setupRequest: (request: Request) => ({ ...request, body: JSON.stringify({ query, variables: variables() }) }) }),
  });
  switch (operation) {
    case 'get':
      return post(GRAPHQL_GET, () => ({ id: String(randomId(context)) }));
    case 'create':
      return post(GRAPHQL_CREATE, () => ({ input: newPet() }));
    default:
      return post(GRAPHQL_LISTS[operation]);
  }
}

/** 80 % list (limit 20), 15 % get, 5 % create, interleaved: a sequence of 20 requests. */
const MIXED = [...'LLLLLGLLLLLGLLLLLGLC'].map((letter) => ({ L: 'list-20', G: 'get', C: 'create' })[letter]!);

/** Every scenario, REST first; each operation exists on both surfaces. */
export const SCENARIOS: readonly Scenario[] = (['rest', 'graphql'] as const).flatMap((surface) => {
  const build = surface === 'rest' ? rest : graphql;
  const one = (name: string, expected: number[]): Scenario => ({ name, surface, expected, requests: (context) => [build(name, context)] });
  return [
    one('get', [200]),
    one('list-20', [200]),
    one('list-100', [200]),
    one('list-status', [200]),
    one('create', surface === 'rest' ? [201] : [200]),
    { name: 'unauthorized', surface, expected: [401], requests: (context) => [build('list-20', context, context.badKey)] },
    { name: 'mixed', surface, expected: surface === 'rest' ? [200, 201] : [200], requests: (context) => MIXED.map((operation) => build(operation, context)) },
  ];
});
