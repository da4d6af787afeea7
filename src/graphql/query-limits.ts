import { ApolloArmor } from '@escape.tech/graphql-armor';
import { type FieldNode, GraphQLError, Kind, type SelectionNode, type ValidationContext } from 'graphql';
import { AppError } from '../errors/error-catalogue';
import { QUERY_LIMITS } from '../limits';

/**
 * Cost of a database field: its selection (`childComplexity`) once per pet it can return, at least
 * `databaseFieldMinCost` so one operation holds at most 10 of them (docs/security.md "Limits").
 * `pets` comes from an `Int` argument or is fixed: prices are cached by `Int` and `Boolean` variables alone (pricedVariablesKey).
 */
export function databaseFieldCost(pets: number, selection: number): number {
  return Math.max(QUERY_LIMITS.databaseFieldMinCost, pets * selection);
}

/**
 * Cost of the `pageInfo` written directly in a connection's selection, so it is counted once, not
 * per pet. Fragment spreads are not followed: such a `pageInfo` stays priced per pet (more, never less).
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
 * Cost of a connection field: edges per pet, `pageInfo` once, so a full page of 100 with all of
 * `pageInfo` (as Apollo's `relayStylePagination` asks) fits one operation (docs/security.md "Limits").
 */
export function connectionFieldCost(pets: number, selection: number, connection: FieldNode): number {
  const pageInfo = Math.min(pageInfoCost(connection), selection);
  return Math.max(QUERY_LIMITS.databaseFieldMinCost, pets * (selection - pageInfo) + pageInfo);
}

/** The query limits, as refusals name them in logs. */
export type QueryLimit = 'depth' | 'aliases' | 'directives' | 'tokens' | 'cost' | 'mutations' | 'selections';

/** An operation refused by a query limit (400); `maximum` and `found` in the limit's own unit (docs/security.md "Limits"). */
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

const figure = (n: number) => n.toLocaleString('en-US');

/** Refusal of an operation whose fragments expand past `maxPricedSelections` selections. */
export function unpriceableRefusal(): QueryLimitError {
  const most = QUERY_LIMITS.maxPricedSelections;
  return new QueryLimitError('selections', `Query cannot be priced: with its fragments expanded it holds more than ${figure(most)} selections.`, most);
}

/** Refusal over the mutation or cost limit, or undefined; mutations first, so a second create is refused as such. */
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

/** graphql-js's parse error past `maxTokens` (it spells it "more that"). */
const TOKEN_LIMIT_MESSAGE = /^Syntax Error: Document contains more tha[nt] \d+ tokens\. Parsing aborted\.$/;

/** Which query limit refused an operation, if any: Armor's wrap a QueryLimitError; the token limit is a parse error. */
export function queryLimitOf(error: Error): Pick<QueryLimitError, 'limit' | 'maximum' | 'found'> | undefined {
  if (error instanceof QueryLimitError) return error;
  const original = error instanceof GraphQLError ? error.originalError : undefined;
  if (original instanceof QueryLimitError) return original;
  if (TOKEN_LIMIT_MESSAGE.test(error.message)) return { limit: 'tokens', maximum: QUERY_LIMITS.maxTokens };
  return undefined;
}

/**
 * An Armor limit that reports a validation error (returned like any other, over HTTP and WebSocket)
 * rather than throwing, wrapping a QueryLimitError so it keeps 400. Armor prefixes every refusal
 * with "Syntax Error: ", wrong here: the document did parse.
 */
function armorLimit(limit: QueryLimit, maximum: number) {
  const reject = (context: ValidationContext | null, error: GraphQLError) => {
    const message = error.message.replace(/^Syntax Error: /, '');
    context?.reportError(new GraphQLError(message, { originalError: new QueryLimitError(limit, message, maximum) }));
  };
  return { n: maximum, exposeLimits: true, propagateOnRejection: false, onReject: [reject] };
}

/** Apollo Server settings from GraphQL Armor; its cost rule is off: costLimitPlugin's model knows `limit`. */
export function armorSettings(production: boolean) {
  return new ApolloArmor({
    maxDepth: { ...armorLimit('depth', QUERY_LIMITS.maxDepth), ignoreIntrospection: true, flattenFragments: true },
    // Armor leaves `__typename` aliases out by default: they are counted like any other.
    maxAliases: { ...armorLimit('aliases', QUERY_LIMITS.maxAliases), allowList: [] },
    // Armor's token check re-parses in a hook and turns syntax errors into 500s: PARSE_OPTIONS does it.
    maxTokens: { enabled: false },
    maxDirectives: armorLimit('directives', QUERY_LIMITS.maxDirectives),
    costLimit: { enabled: false },
    blockFieldSuggestion: { enabled: production },
  }).protect();
}

/** graphql-js parse options for Apollo: the token limit, enforced while parsing. */
export const PARSE_OPTIONS = Object.freeze({ maxTokens: QUERY_LIMITS.maxTokens });
