import type { FastifyBaseLogger } from 'fastify';
import {
  type DocumentNode,
  GraphQLBoolean,
  GraphQLIncludeDirective,
  GraphQLInt,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
  GraphQLSkipDirective,
  Kind,
  type OperationDefinitionNode,
  OperationTypeNode,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  type ValidationRule,
  getOperationAST,
  type FragmentDefinitionNode,
  getVariableValues,
  parse,
  validate,
  visit,
} from 'graphql';
import { collectFields } from 'graphql/execution/collectFields';
import { type RootType, type Scope, isMetaField, rootFieldScope } from '../auth/api-key-policy';
import { type ComplexityEstimator, fieldExtensionsEstimator, getComplexity, simpleEstimator } from 'graphql-query-complexity';
import type { ErrorCode } from '../errors/error-catalogue';
import { QUERY_LIMITS } from '../limits';
import { PARSE_OPTIONS, type QueryLimitError, priceRefusal, queryLimitOf, unpriceableRefusal } from './query-limits';

/** Cost units, Mutation root fields, and pet-store calls (what the rate limit charges). */
export type OperationPrice = { cost: number; mutations: number; calls: number } | { unpriceable: true };

/**
 * The price of an operation (docs/security.md "Limits"): calls are the root fields that run,
 * `@skip`/`@include` applied, meta fields left out; unpriceable past `maxPricedSelections`.
 */
export function priceOf(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  operationName: string | undefined,
  variables: Record<string, unknown>,
): OperationPrice {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]);
  const price = (query: DocumentNode) => {
    const measure = (estimators: ComplexityEstimator[]) =>
      getComplexity({ schema, query, operationName, variables, estimators, maxQueryNodes: QUERY_LIMITS.maxPricedSelections });
    const cost = measure([metaFieldEstimator, fieldExtensionsEstimator(), simpleEstimator({ defaultComplexity: 1 })]);
    const calls = measure([({ type, field }) => (roots.has(type as GraphQLObjectType) && !META_FIELDS.has(field) ? 1 : 0)]);
    return { cost, calls, mutations: operation.operation === OperationTypeNode.MUTATION ? calls : 0 };
  };
  try {
    return price(document);
  } catch {
    // An `if` that does not coerce (null variable) throws: priced with every condition true, so
    // execution reports the error as graphql-js does.
  }
  try {
    return price(visit(document, { Directive: (node) => (CONDITIONS.has(node.name.value) ? null : undefined) }));
  } catch {
    return { unpriceable: true };
  }
}

const META_FIELDS: ReadonlySet<GraphQLField<unknown, unknown>> = new Set([TypeNameMetaFieldDef, SchemaMetaFieldDef, TypeMetaFieldDef]);

/** Meta fields cost only their selection: `__typename`, which Apollo Client adds everywhere, is free. */
const metaFieldEstimator: ComplexityEstimator = ({ field, childComplexity }) => (META_FIELDS.has(field) ? childComplexity : undefined);

/** The directives whose `if` decides whether a selection runs. */
export const CONDITIONS: ReadonlySet<string> = new Set([GraphQLSkipDirective.name, GraphQLIncludeDirective.name]);

/** What a price can read of the variables: list sizes (`Int`, see query-limits.ts) and `@skip`/`@include` conditions (`Boolean`). */
const PRICED_VARIABLE_TYPES: ReadonlySet<string> = new Set([GraphQLInt.name, GraphQLBoolean.name]);

/**
 * The part of `variables` that {@link priceOf} can depend on, as JSON: the values of the operation's `Int` and `Boolean`
 * variables. Field costs read no other argument, so a price cached under the document and this key fits every request.
 */
export function pricedVariablesKey(operation: OperationDefinitionNode, variables: Record<string, unknown>): string {
  const priced: Record<string, unknown> = {};
  for (const { variable, type } of operation.variableDefinitions ?? []) {
    let named = type;
    while (named.kind !== Kind.NAMED_TYPE) named = named.type;
    if (PRICED_VARIABLE_TYPES.has(named.name.value)) priced[variable.name.value] = variables[variable.name.value];
  }
  return JSON.stringify(priced);
}

/**
 * The scopes the operation's root fields need (docs/api-keys.md "Kinds and scopes"): the fields that would run, as
 * graphql-js collects them (aliases, fragments, `@skip`/`@include` applied); meta fields need none; `undefined` stands
 * for a field the scope table lacks. Empty when a condition cannot be read: execution then fails the same way before
 * any resolver runs.
 * @param variables - coerced (getVariableValues), so conditions read as execution reads them.
 */
export function neededScopes(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown>,
): Set<Scope | undefined> {
  const root = schema.getRootType(operation.operation);
  if (!root) return new Set([undefined]);
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition;
  let fields: Map<string, readonly { name: { value: string } }[]>;
  try {
    fields = collectFields(schema, fragments, variables, root, operation.selectionSet);
  } catch {
    return new Set();
  }
  const scopes = new Set<Scope | undefined>();
  for (const [, [field]] of fields) {
    if (!isMetaField(field.name.value)) scopes.add(rootFieldScope(root.name as RootType, field.name.value));
  }
  return scopes;
}

/** Logs at info the first of `errors` a query limit raised (docs/operations.md "Logs"). */
export function logQueryLimitRefusal(log: FastifyBaseLogger, errors: readonly Error[], cost?: number): void {
  for (const error of errors) {
    const refusal = queryLimitOf(error);
    if (!refusal) continue;
    const { limit, maximum, found } = refusal;
    const queryLimit = { limit, maximum, ...(found !== undefined && { found }) };
    log.info({ queryLimit, ...(cost !== undefined && { cost }), reason: error.message }, 'GraphQL operation refused by a query limit');
    return;
  }
}

/** The query limit an operation of that price breaks, if any. */
export function refusalOf(price: OperationPrice): QueryLimitError | undefined {
  return 'unpriceable' in price ? unpriceableRefusal() : priceRefusal(price);
}

/** Why a document is refused, as graphql-ws sends it. */
export interface DocumentRefusal {
  code: ErrorCode;
  message: string;
}

/** A GraphQL request outside Apollo (a WebSocket `subscribe`). */
export interface DocumentRequest {
  query: string;
  operationName?: string | null;
  variables?: Record<string, unknown> | null;
}

/**
 * Checks a request as Apollo and cost-limit.plugin.ts check one over HTTP, for an operation of
 * type `only`: the document to run (no locations), its price and the scopes it needs, or the refusals with catalogue codes.
 */
export function checkDocument(
  schema: GraphQLSchema,
  rules: readonly ValidationRule[],
  { query, operationName, variables }: DocumentRequest,
  log: FastifyBaseLogger,
  only: { operation: OperationTypeNode; message: string },
):
  | { refusals: DocumentRefusal[] }
  | { document: DocumentNode; operationName?: string; price: { cost: number; calls: number }; scopes: ReadonlySet<Scope | undefined> } {
  const refused = (code: ErrorCode, errors: readonly Error[], cost?: number) => {
    logQueryLimitRefusal(log, errors, cost);
    return { refusals: errors.map((error) => ({ code, message: error.message })) };
  };
  let document: DocumentNode;
  try {
    document = parse(query, PARSE_OPTIONS);
  } catch (error) {
    return refused('GRAPHQL_PARSE_FAILED', [error as Error]);
  }
  const invalid = validate(schema, document, rules);
  if (invalid.length > 0) return refused('GRAPHQL_VALIDATION_FAILED', invalid);
  const name = operationName ?? undefined;
  const operation = getOperationAST(document, name);
  if (!operation) return { refusals: [{ code: 'OPERATION_RESOLUTION_FAILURE', message: 'The operation to run could not be determined.' }] };
  if (operation.operation !== only.operation) return { refusals: [{ code: 'GRAPHQL_VALIDATION_FAILED', message: only.message }] };
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {});
  if (coerced.errors) return { refusals: coerced.errors.map((error) => ({ code: 'BAD_USER_INPUT', message: error.message })) };
  const price = priceOf(schema, document, operation, name, variables ?? {});
  if ('unpriceable' in price) return refused('GRAPHQL_VALIDATION_FAILED', [unpriceableRefusal()]);
  const refusal = priceRefusal(price);
  if (refusal) return refused(refusal.code, [refusal], price.cost);
  const scopes = neededScopes(schema, document, operation, coerced.coerced);
  // Reparsed without locations: what runs keeps no source text alive.
  return { document: parse(query, { ...PARSE_OPTIONS, noLocation: true }), operationName: name, price, scopes };
}
