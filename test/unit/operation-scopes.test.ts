import 'reflect-metadata';
import { type GraphQLSchema, getOperationAST, getVariableValues, parse } from 'graphql';
import { neededScopes } from '../../src/graphql/document-check';
import { buildPetStoreSchema } from '../../src/graphql/schema';

/**
 * The scopes a GraphQL operation needs (docs/api-keys.md "Kinds and scopes"), decided on the root fields that would
 * run, against the real schema built without a database.
 */

let schema: GraphQLSchema;
beforeAll(async () => {
  schema = await buildPetStoreSchema();
});

function scopesOf(query: string, variables: Record<string, unknown> = {}): string[] {
  const document = parse(query);
  const operation = getOperationAST(document)!;
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
  if (coerced.errors) throw coerced.errors[0];
  return [...neededScopes(schema, document, operation, coerced.coerced)].map((scope) => scope ?? 'refused').sort();
}

describe('the scopes of a GraphQL operation', () => {
  test.each([
    ['{ pets { id } }', ['pets:read']],
    ['{ a: pets { id } b: petsConnection { pageInfo { hasNextPage } } c: pet(id: 1) { id } d: node(id: 1) { id } }', ['pets:read']],
    ['mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } }', ['pets:write']],
    ['mutation { renamed: createPet(input: { name: "Rex", categoryId: 1 }) { id } }', ['pets:write']],
    ['mutation { ...M } fragment M on Mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } }', ['pets:write']],
    ['mutation { ... on Mutation { createPet(input: { name: "Rex", categoryId: 1 }) { id } } }', ['pets:write']],
    ['mutation { __typename }', []],
    ['mutation { createPet(input: { name: "Rex", categoryId: 1 }) @skip(if: true) { id } __typename }', []],
    ['{ __typename __schema { queryType { name } } }', []],
    ['subscription { petCreated { id } }', ['pets:read']],
    ['subscription { petEvents(after: null) { cursor pet { id } } }', ['pets:read']],
  ])('when the operation is %s, then it needs %p', (query, scopes) => {
    expect(scopesOf(query)).toEqual(scopes);
  });

  test('when @include reads a variable, then the scope follows its value', () => {
    const query = 'mutation ($write: Boolean!) { createPet(input: { name: "Rex", categoryId: 1 }) @include(if: $write) { id } __typename }';
    expect(scopesOf(query, { write: false })).toEqual([]);
    expect(scopesOf(query, { write: true })).toEqual(['pets:write']);
  });
});
