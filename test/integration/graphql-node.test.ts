import { createLogger } from '../../src/observability/logger';
import { type Metrics, createMetrics } from '../../src/observability/metrics.registry';
import { answerOf, createPet, graphql, request, startTestApp, type TestApp } from '../helpers/test-app';

/** Relay Global Object Identification (docs/graphql.md "Relay"): the Node interface and `node(id:)`. */

let t: TestApp;
let metrics: Metrics;
/** The app's log lines at warn and above. */
const warnings: Array<Record<string, unknown>> = [];
beforeAll(async () => {
  metrics = createMetrics();
  t = await startTestApp({ observe: { metrics, logger: createLogger('warn', { write: (line) => void warnings.push(JSON.parse(line)) }) } });
});
afterAll(() => t.close());
beforeEach(() => t.clearPets());

const NODE = 'query Node($id: ID!) { node(id: $id) { __typename id ... on Pet { name categoryId status } } }';
const PET = 'query Pet($id: ID!) { pet(id: $id) { __typename id name categoryId status } }';

/** The getPet calls counted for the test's key (petstore_deprecated_calls_total, docs/operations.md "Metrics"). */
async function deprecatedGetPetCalls(): Promise<number> {
  const keyId = String((await t.apiKeys.authentication.findActive(t.apiKey))!.id);
  const { values } = await metrics.registry.getSingleMetric('petstore_deprecated_calls_total')!.get();
  return values.find(({ labels }) => labels.operation === 'getPet' && labels.api_key_id === keyId)?.value ?? 0;
}

describe('node(id:)', () => {
  test('when the id is a stored pet\'s, then that Pet, with __typename "Pet" and its fields through `... on Pet`', async () => {
    const pet = await createPet(t, { name: 'Kitty', categoryId: 4, status: 'pending' });
    const result = await graphql(t, NODE, { id: String(pet.id) });
    expect(answerOf(result.body)).toEqual({ data: { node: { __typename: 'Pet', id: String(pet.id), name: 'Kitty', categoryId: 4, status: 'pending' } } });
  });

  test('when the pet is read through node and through REST GET /v1/pets/{id}, then both give the same pet, the id as a string on GraphQL', async () => {
    const { id } = await createPet(t, { name: 'Same' });
    const rest = await request(t, 'GET', `/v1/pets/${id}`);
    expect(rest.status).toBe(200);
    const result = await graphql(t, NODE, { id: String(id) });
    const { __typename, ...node } = result.body.data.node;
    expect(node).toEqual({ ...rest.body, id: String(rest.body.id) });
  });

  test('when the id is an Int literal, then it is read as an ID, as pet(id:) reads it', async () => {
    const pet = await createPet(t);
    const result = await graphql(t, `{ node(id: ${pet.id}) { id } }`);
    expect(answerOf(result.body)).toEqual({ data: { node: { id: String(pet.id) } } });
  });

  test('when no pet has the id, then null without an error', async () => {
    const result = await graphql(t, NODE, { id: '987654321' });
    expect(answerOf(result.body)).toEqual({ data: { node: null } });
  });

  test.each(['abc', '0', '-1', '007', '9007199254740992', 'UGV0OjE='])(
    'when the id is %p, then the same BAD_USER_INPUT error as pet(id:), from the same rules',
    async (id) => {
      const node = await graphql(t, NODE, { id });
      const pet = await graphql(t, PET, { id });
      expect(node.body.data).toEqual({ node: null });
      expect(node.body.errors).toHaveLength(1);
      const [{ message, extensions }] = node.body.errors;
      expect(extensions).toEqual({ code: 'BAD_USER_INPUT' });
      expect({ message, extensions }).toEqual({ message: pet.body.errors[0].message, extensions: pet.body.errors[0].extensions });
      expect(node.status).toBe(pet.status);
    },
  );

  test('when node is called, then no getPet call is counted or logged; when pet(id:) is, it is', async () => {
    const pet = await createPet(t);
    const before = await deprecatedGetPetCalls();
    warnings.length = 0;
    await graphql(t, NODE, { id: String(pet.id) });
    await graphql(t, NODE, { id: '987654321' });
    await graphql(t, NODE, { id: 'abc' });
    expect(await deprecatedGetPetCalls()).toBe(before);
    expect(warnings.filter((line) => line.msg === 'deprecated operation called')).toEqual([]);
    // The control: the counter read here does count pet(id:).
    await graphql(t, PET, { id: String(pet.id) });
    expect(await deprecatedGetPetCalls()).toBe(before + 1);
  });

  test('when node and pet read the same selection, then they cost the same and one rate-limit unit each', async () => {
    const pet = await createPet(t);
    const node = await graphql(t, `{ node(id: "${pet.id}") { id ... on Pet { name } } }`);
    const lookup = await graphql(t, `{ pet(id: "${pet.id}") { id name } }`);
    expect(node.body.extensions.cost).toEqual(lookup.body.extensions.cost);
    expect(node.body.extensions.cost.rateLimitUnits).toBe(1);
  });
});

describe('the Node interface in introspection', () => {
  test('when Query is introspected, then node(id: ID!): Node is not deprecated', async () => {
    const result = await graphql(
      t,
      '{ __type(name: "Query") { fields(includeDeprecated: true) { name isDeprecated deprecationReason type { kind name } args { name type { kind ofType { name } } } } } }',
    );
    const node = result.body.data.__type.fields.find((field: { name: string }) => field.name === 'node');
    expect(node).toEqual({
      name: 'node',
      isDeprecated: false,
      deprecationReason: null,
      type: { kind: 'INTERFACE', name: 'Node' },
      args: [{ name: 'id', type: { kind: 'NON_NULL', ofType: { name: 'ID' } } }],
    });
  });

  test('when Pet and Node are introspected, then Pet lists Node in its interfaces, and Pet is the one Node type', async () => {
    const result = await graphql(
      t,
      '{ pet: __type(name: "Pet") { interfaces { name } } node: __type(name: "Node") { kind description fields { name } possibleTypes { name } } }',
    );
    expect(result.body.data.pet.interfaces).toEqual([{ name: 'Node' }]);
    expect(result.body.data.node).toEqual({
      kind: 'INTERFACE',
      description: expect.stringMatching(/Relay Node interface/),
      fields: [{ name: 'id' }],
      possibleTypes: [{ name: 'Pet' }],
    });
  });
});
