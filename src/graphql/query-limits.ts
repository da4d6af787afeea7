import { ApolloArmor } from '@escape.tech/graphql-armor';
import { type FieldNode, GraphQLError, Kind, type SelectionNode, type ValidationContext } from 'graphql';
import { AppError } from '../errors/error-catalogue';
import { QUERY_LIMITS } from '../limits';

/**
 * The cost of a field that reads or writes the database (`pets`, `petsConnection`, `pet`,
 * `createPet`, `petCreated`): its selection once per pet it can return, and at least
 * {@link QUERY_LIMITS}.databaseFieldMinCost, so that one operation holds at most 10 of them
 * (docs/security.md "Limits"). The rate limit charges each such root field one unit, whatever it costs
 * here (rateLimitUnits in guard/rate-limiter.ts).
 *
 * @param pets - how many pets the field can return: 1 for `pet` and `createPet`, `limit` for `pets`.
 * @param selection - the cost of its selection (type-graphql's `childComplexity`), 1 per field.
 * @returns its cost, in the units of {@link QUERY_LIMITS}.maxCost.
 */
export function databaseFieldCost(pets: number, selection: number): number {
  return Math.max(QUERY_LIMITS.databaseFieldMinCost, pets * selection);
}

/**
 * What the `pageInfo` fields written directly in a connection's selection cost (each 1 with its
 * fields, `__typename` free, inline fragments followed): a page has one `pageInfo`, so
 * {@link connectionFieldCost} counts it once, not once per pet. A `pageInfo` reached through a
 * fragment spread is not seen here and stays priced per pet: more, never less.
 *
 * @param connection - the connection's field node (graphql-query-complexity's `node`).
 * @returns cost units.
 */
function pageInfoCost(connection: FieldNode): number {
  const fieldsIn = (selections: readonly SelectionNode[] | undefined, within: boolean): number =>
    (selections ?? []).reduce((sum, selection) => {
      if (selection.kind === Kind.INLINE_FRAGMENT) return sum + fieldsIn(selection.selectionSet.selections, within);
      if (selection.kind !== Kind.FIELD) return sum;
      if (within) return sum + (selection.name.value === '__typename' ? 0 : 1);
      return selection.name.value === 'pageInfo' ? sum + 1 + fieldsIn(selection.selectionSet?.selections, true) : sum;
    }, 0);
  return fieldsIn(connection.selectionSet?.selections, false);
}

/**
 * The cost of a Relay connection field (`petsConnection`): its edges as {@link databaseFieldCost}
 * prices a list, once per pet, and its `pageInfo` once (docs/security.md "Limits"), so that a full
 * page of 100 with every `pageInfo` field, as Apollo's `relayStylePagination` asks, fits one operation.
 *
 * @param pets - `first`: how many pets the page can hold.
 * @param selection - the cost of its whole selection (type-graphql's `childComplexity`).
 * @param connection - its field node, where `pageInfo` is read.
 * @returns its cost, in the units of {@link QUERY_LIMITS}.maxCost.
 */
export function connectionFieldCost(pets: number, selection: number, connection: FieldNode): number {
  const pageInfo = Math.min(pageInfoCost(connection), selection);
  return Math.max(QUERY_LIMITS.databaseFieldMinCost, pets * (selection - pageInfo) + pageInfo);
}

/** The query limits, as a refusal names them in logs (docs/security.md "Limits"). */
export type QueryLimit = 'depth' | 'aliases' | 'directives' | 'tokens' | 'cost' | 'mutations' | 'selections';

/**
 * An operation refused by one of the query limits (docs/security.md "Limits"): GRAPHQL_VALIDATION_FAILED,
 * HTTP 400 in both response formats (legacy-json-status.plugin.ts), its message naming the limit
 * and its maximum (`Query cost 1,240 exceeds the maximum of 1,000.`), and for the log line the
 * limit, its maximum and, when known, what the operation holds.
 *
 * @param limit - the limit that refused it.
 * @param message - what the client reads.
 * @param maximum - the limit's value, in its own unit (fields of depth, aliases, cost units, …).
 * @param found - what the operation holds, when the refusal measured it (cost, mutations).
 */
export class QueryLimitError extends AppError {
  constructor(
    readonly limit: QueryLimit,
    message: string,
    readonly maximum: number,
    readonly found?: number,
  ) {
    super('GRAPHQL_VALIDATION_FAILED', message);
  }
}

/** A figure as messages show it: `1,240`. */
const figure = (n: number) => n.toLocaleString('en-US');

/**
 * The refusal of an operation that cannot be priced: its fragments expand past
 * {@link QUERY_LIMITS}.maxPricedSelections selections (docs/security.md "Limits"). For HTTP operations
 * (cost-limit.plugin.ts) and subscriptions (document-check.ts).
 */
export function unpriceableRefusal(): QueryLimitError {
  const most = QUERY_LIMITS.maxPricedSelections;
  return new QueryLimitError('selections', `Query cannot be priced: with its fragments expanded it holds more than ${figure(most)} selections.`, most);
}

/**
 * The refusal of an operation over the mutation limit or the cost limit (docs/security.md "Limits"), as
 * the HTTP plugin (cost-limit.plugin.ts) and subscriptions (document-check.ts) both give it.
 *
 * @param price - the operation's cost in units of {@link QUERY_LIMITS}.maxCost and its number of Mutation root fields.
 * @returns the QueryLimitError to answer, or undefined when the operation is within both limits.
 *   The mutation limit is checked first: a second create is refused as such whatever it costs.
 */
export function priceRefusal(price: { cost: number; mutations: number }): QueryLimitError | undefined {
  if (price.mutations > QUERY_LIMITS.maxMutations) {
    const most = QUERY_LIMITS.maxMutations;
    return new QueryLimitError(
      'mutations',
      `The operation runs ${figure(price.mutations)} mutation fields; the maximum is ${figure(most)}.`,
      most,
      price.mutations,
    );
  }
  if (price.cost > QUERY_LIMITS.maxCost) {
    const most = QUERY_LIMITS.maxCost;
    return new QueryLimitError('cost', `Query cost ${figure(price.cost)} exceeds the maximum of ${figure(most)}.`, most, price.cost);
  }
  return undefined;
}

/**
 * graphql-js's parse error past the token limit (`PARSE_OPTIONS`), which names the limit itself:
 * "Syntax Error: Document contains more that 1000 tokens. Parsing aborted." ("that" is its spelling).
 */
const TOKEN_LIMIT_MESSAGE = /^Syntax Error: Document contains more tha[nt] \d+ tokens\. Parsing aborted\.$/;

/**
 * Which query limit refused an operation, if one did: the one test of "is this one of our limits"
 * for the response status (legacy-json-status.plugin.ts), the log line (cost-limit.plugin.ts) and
 * subscriptions.
 *
 * @param error - a request error as Apollo or graphql-js raised it: a {@link QueryLimitError} (cost,
 *   mutations, pricing) or one wrapping it (Armor's depth, aliases, directives through
 *   {@link armorSettings}), or graphql-js's parse error past the token limit.
 * @returns the limit, its maximum and, when measured, what the operation holds; undefined for any
 *   other error. Throws nothing.
 */
export function queryLimitOf(error: Error): Pick<QueryLimitError, 'limit' | 'maximum' | 'found'> | undefined {
  if (error instanceof QueryLimitError) return error;
  const original = error instanceof GraphQLError ? error.originalError : undefined;
  if (original instanceof QueryLimitError) return original;
  if (TOKEN_LIMIT_MESSAGE.test(error.message)) return { limit: 'tokens', maximum: QUERY_LIMITS.maxTokens };
  return undefined;
}

/**
 * One of Armor's document limits, set to report its refusal as a validation error (graphql-js
 * then returns it with any other, over HTTP and WebSocket alike) rather than throw it, and as a
 * {@link QueryLimitError}, so that it keeps 400 and is logged like the others. The message is
 * Armor's (`Query depth limit of 6 exceeded, found 7.`) without the "Syntax Error: " prefix Armor
 * puts on every refusal: the document did parse.
 */
function armorLimit(limit: QueryLimit, maximum: number) {
  const reject = (context: ValidationContext | null, error: GraphQLError) => {
    const message = error.message.replace(/^Syntax Error: /, '');
    context?.reportError(new GraphQLError(message, { originalError: new QueryLimitError(limit, message, maximum) }));
  };
  return { n: maximum, exposeLimits: true, propagateOnRejection: false, onReject: [reject] };
}

/**
 * Apollo Server settings from GraphQL Armor: depth, alias and directive limits as
 * validation rules, field suggestions blocked in production, batching off, no stack traces.
 * Armor's own cost rule is off: the cost model is costLimitPlugin's (cost-limit.plugin.ts), the one that
 * knows `limit`.
 *
 * @param production - true hides field suggestions ("Did you mean …?").
 */
export function armorSettings(production: boolean) {
  return new ApolloArmor({
    maxDepth: { ...armorLimit('depth', QUERY_LIMITS.maxDepth), ignoreIntrospection: true, flattenFragments: true },
    // Armor leaves `__typename` aliases out by default: they are counted like any other.
    maxAliases: { ...armorLimit('aliases', QUERY_LIMITS.maxAliases), allowList: [] },
    // Armor's token check re-parses in a hook and turns syntax errors into 500s: graphql-js's
    // own `maxTokens` parse option does it instead (see `parseOptions` below).
    maxTokens: { enabled: false },
    maxDirectives: armorLimit('directives', QUERY_LIMITS.maxDirectives),
    costLimit: { enabled: false },
    blockFieldSuggestion: { enabled: production },
  }).protect();
}

/** graphql-js parse options for Apollo: the token limit, enforced while parsing. */
export const PARSE_OPTIONS = Object.freeze({ maxTokens: QUERY_LIMITS.maxTokens });
