/* eslint-disable */
import { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';
export type Maybe<T> = T | null;
export type InputMaybe<T> = T | null | undefined;
export type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
export type MakeOptional<T, K extends keyof T> = Omit<T, K> & { [SubKey in K]?: Maybe<T[SubKey]> };
export type MakeMaybe<T, K extends keyof T> = Omit<T, K> & { [SubKey in K]: Maybe<T[SubKey]> };
export type MakeEmpty<T extends { [key: string]: unknown }, K extends keyof T> = { [_ in K]?: never };
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
/** All built-in and custom scalars, mapped to their actual values */
export type Scalars = {
  ID: { input: string; output: string; }
  String: { input: string; output: string; }
  Boolean: { input: boolean; output: boolean; }
  Int: { input: number; output: number; }
  Float: { input: number; output: number; }
  /** The `SafeInt` scalar type represents non-fractional signed whole numeric values that are considered safe as defined by the ECMAScript specification. */
  SafeInt: { input: number; output: number; }
};

export type Mutation = {
  __typename?: 'Mutation';
  /** Adds a new animal. Send an Idempotency-Key header to make retries safe. */
  createPet: Pet;
};


export type MutationCreatePetArgs = {
  input: NewPetInput;
};

/** A new animal to add. */
export type NewPetInput = {
  /** Identifier of the category (a positive integer). */
  categoryId: Scalars['SafeInt']['input'];
  /** The animal's name: 1 to 100 characters (Unicode code points), not blank, no control characters. */
  name: Scalars['String']['input'];
  /** Availability; `available` when omitted. */
  status?: PetStatus;
};

/** An object that `node(id:)` fetches again by its `id` (the Relay Node interface). Pet is the only Node type: a Node id is a pet id. */
export type Node = {
  /** Identifier, unique among all Node objects: what `node(id:)` takes. */
  id: Scalars['ID']['output'];
};

/** Where this page stands in the list (Relay PageInfo). */
export type PageInfo = {
  __typename?: 'PageInfo';
  /** The last edge's cursor, to pass as `after` for the next page; null when the page is empty. */
  endCursor?: Maybe<Scalars['String']['output']>;
  /** Whether more pets matched after this page when it was read. */
  hasNextPage: Scalars['Boolean']['output'];
  /** Whether this page was asked for with `after`, i.e. is not the first. */
  hasPreviousPage: Scalars['Boolean']['output'];
  /** The first edge's cursor; null when the page is empty. */
  startCursor?: Maybe<Scalars['String']['output']>;
};

/** An animal of the store. */
export type Pet = Node & {
  __typename?: 'Pet';
  /** Identifier of the category the animal belongs to. */
  categoryId: Scalars['SafeInt']['output'];
  /** Unique identifier assigned on creation (an int64, sent as a string). */
  id: Scalars['ID']['output'];
  /** The animal's name: 1 to 100 characters (Unicode code points), not blank. */
  name: Scalars['String']['output'];
  /** Availability of the animal. */
  status: PetStatus;
};

/** A page of animals in ascending id order (Relay cursor connection). */
export type PetConnection = {
  __typename?: 'PetConnection';
  edges: Array<PetEdge>;
  pageInfo: PageInfo;
};

/** A pet in a page of `petsConnection`. */
export type PetEdge = {
  __typename?: 'PetEdge';
  /** Pass as `after` to continue the list after this pet. */
  cursor: Scalars['String']['output'];
  node: Pet;
};

/** One entry of the change feed: a pet whose create has committed, at its place in the feed. */
export type PetEvent = {
  __typename?: 'PetEvent';
  /** Pass as `after` to resume the feed right after this event, on any instance, with any status filter. */
  cursor: Scalars['String']['output'];
  /** The pet as it was created. */
  pet: Pet;
  /** What happened: `pet.created`. */
  type: Scalars['String']['output'];
};

/** Availability of an animal in the store. */
export enum PetStatus {
  /** Can be bought. */
  Available = 'available',
  /** A sale is in progress. */
  Pending = 'pending',
  /** Has been sold. */
  Sold = 'sold'
}

export type Query = {
  __typename?: 'Query';
  /** Returns the object with this `id` (Relay Global Object Identification), or null when none has it. Every Node is a Pet. */
  node?: Maybe<Node>;
  /**
   * Returns one animal by identifier, or null when it does not exist.
   * @deprecated Use `pets(status:)` instead. This field will be removed on 2030-12-05.
   */
  pet?: Maybe<Pet>;
  /** Lists animals in ascending id order, optionally by status. To page, pass `after` (see `petsConnection`). */
  pets: Array<Pet>;
  /** Lists animals in ascending id order, optionally by status, a page at a time: pass `pageInfo.endCursor` as `after` for the next page. */
  petsConnection: PetConnection;
};


export type QueryNodeArgs = {
  id: Scalars['ID']['input'];
};


export type QueryPetArgs = {
  id: Scalars['ID']['input'];
};


export type QueryPetsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  limit?: InputMaybe<Scalars['Int']['input']>;
  status?: InputMaybe<PetStatus>;
};


export type QueryPetsConnectionArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  first?: InputMaybe<Scalars['Int']['input']>;
  status?: InputMaybe<PetStatus>;
};

export type Subscription = {
  __typename?: 'Subscription';
  /** Each animal added from now on (REST or GraphQL, any instance), after it is stored; only those with `status` when given. Over WebSocket (graphql-transport-ws) only. */
  petCreated: Pet;
  /** The change feed: replays every event after the one whose `cursor` is `after`, then sends each new one, in feed order and each once, whichever instance stored the pet; from now without `after`. Only pets with `status` when given. Over WebSocket only. */
  petEvents: PetEvent;
};


export type SubscriptionPetCreatedArgs = {
  status?: InputMaybe<PetStatus>;
};


export type SubscriptionPetEventsArgs = {
  after?: InputMaybe<Scalars['String']['input']>;
  status?: InputMaybe<PetStatus>;
};

export type PetsPageQueryVariables = Exact<{
  first?: InputMaybe<Scalars['Int']['input']>;
  after?: InputMaybe<Scalars['String']['input']>;
}>;


export type PetsPageQuery = { __typename?: 'Query', petsConnection: { __typename: 'PetConnection', edges: Array<{ __typename: 'PetEdge', cursor: string, node: { __typename: 'Pet', id: string, name: string, categoryId: number, status: PetStatus } }>, pageInfo: { __typename: 'PageInfo', hasNextPage: boolean, endCursor?: string | null } } };

export type CreatePetMutationVariables = Exact<{
  input: NewPetInput;
}>;


export type CreatePetMutation = { __typename?: 'Mutation', createPet: { __typename: 'Pet', id: string, name: string, categoryId: number, status: PetStatus } };

export type PetCreatedSubscriptionVariables = Exact<{ [key: string]: never; }>;


export type PetCreatedSubscription = { __typename?: 'Subscription', petCreated: { __typename: 'Pet', id: string, name: string, categoryId: number, status: PetStatus } };


export const PetsPageDocument = {"__meta__":{"hash":"de9f35887c144362023c717b2475716f32b0c928099391b83bb5dd582018509a"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"PetsPage"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"first"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"Int"}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"after"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"String"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"petsConnection"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"first"},"value":{"kind":"Variable","name":{"kind":"Name","value":"first"}}},{"kind":"Argument","name":{"kind":"Name","value":"after"},"value":{"kind":"Variable","name":{"kind":"Name","value":"after"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"edges"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"cursor"}},{"kind":"Field","name":{"kind":"Name","value":"node"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"categoryId"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"__typename"}}]}},{"kind":"Field","name":{"kind":"Name","value":"__typename"}}]}},{"kind":"Field","name":{"kind":"Name","value":"pageInfo"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"hasNextPage"}},{"kind":"Field","name":{"kind":"Name","value":"endCursor"}},{"kind":"Field","name":{"kind":"Name","value":"__typename"}}]}},{"kind":"Field","name":{"kind":"Name","value":"__typename"}}]}}]}}]} as unknown as DocumentNode<PetsPageQuery, PetsPageQueryVariables>;
export const CreatePetDocument = {"__meta__":{"hash":"08cea35822e871695980556be5bd069a5a0b549e31e3893d1058a2434abfd279"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"mutation","name":{"kind":"Name","value":"CreatePet"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"input"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"NewPetInput"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"createPet"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"input"},"value":{"kind":"Variable","name":{"kind":"Name","value":"input"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"categoryId"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"__typename"}}]}}]}}]} as unknown as DocumentNode<CreatePetMutation, CreatePetMutationVariables>;
export const PetCreatedDocument = {"__meta__":{"hash":"c133aecdc0ff97ed50ab5b4a0b0eaa0d28cb29228eafd26d5f5166aa7a244154"},"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"subscription","name":{"kind":"Name","value":"PetCreated"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"petCreated"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"categoryId"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"__typename"}}]}}]}}]} as unknown as DocumentNode<PetCreatedSubscription, PetCreatedSubscriptionVariables>;