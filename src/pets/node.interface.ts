import { Field, ID, InterfaceType } from 'type-graphql';

/**
 * The Relay Node interface (docs/graphql.md "Relay"): an object that `Query.node(id:)` fetches again by its `id`.
 * Pet is its only type, so a Node id is a pet id as REST sends it; a future Node type must get ids that cannot
 * collide with pet ids.
 */
// No `resolveType`: type-graphql wraps one in an async function, which graphql-jit cannot use; its default names the
// type by the value's class, so a Node field returns class instances (see PetResolver.node).
@InterfaceType('Node', {
  description: 'An object that `node(id:)` fetches again by its `id` (the Relay Node interface). Pet is the only Node type: a Node id is a pet id.',
})
export abstract class Node {
  @Field(() => ID, { description: 'Identifier, unique among all Node objects: what `node(id:)` takes.' })
  id!: number;
}
