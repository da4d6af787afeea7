import { ApolloArmor } from '@escape.tech/graphql-armor';

/**
 * Limits on one GraphQL operation (OWASP GraphQL cheat sheet; issue "hard to break"; docs/security.md
 * "Limits"). Armor's defaults, tuned to this schema:
 * - depth 6, counted in fields: fragments, spread or inline, add no level, so Relay-style
 *   colocated fragments cost nothing; introspection's `__schema`, which GraphiQL needs, is
 *   exempt. Real queries here are 2 to 4 deep;
 * - 15 aliases, `__typename` aliases included (each is a field to answer);
 * - cost 1000, priced by {@link databaseFieldCost}: a field that reads or writes the database
 *   costs at least one request's worth (100), a list its `limit` times its selection, any
 *   other field 1. So `pets(limit: 100) { id name categoryId status }` costs 400 (two full
 *   pages per operation), and one operation reads or writes the database at most 10 times;
 * - 1 mutation field (`createPet`) per operation: one create per operation, as on REST, and
 *   one Idempotency-Key never covers several creates.
 * The values are never shown to clients; every rejection says "Query validation error.".
 */
export const QUERY_LIMITS = Object.freeze({
  maxDepth: 6,
  maxAliases: 15,
  maxTokens: 1000,
  maxDirectives: 50,
  maxCost: 1000,
  /** One request's worth of cost: the rate limit charges 1 request per started 100 of cost. */
  costPerRequestUnit: 100,
  /** Root fields of the Mutation type per operation, counted as written (aliases and fragments included, `@skip`/`@include` applied). */
  maxMutations: 1,
});

/**
 * The price of a field that reads or writes the database (`pets`, `pet`, `createPet`): its
 * selection once per pet it can return, and at least one request's worth, so that N such
 * fields in one operation cost at least N requests, what N REST calls cost (docs/security.md "Limits").
 *
 * @param pets - how many pets the field can return: 1 for `pet` and `createPet`, `limit` for `pets`.
 * @param selection - the cost of its selection (type-graphql's `childComplexity`), 1 per field.
 * @returns its cost, in the units of {@link QUERY_LIMITS}.maxCost.
 */
export function databaseFieldCost(pets: number, selection: number): number {
  return Math.max(QUERY_LIMITS.costPerRequestUnit, pets * selection);
}

/**
 * What an operation costs against the rate limit (docs/security.md "Limits"): one request per started
 * {@link QUERY_LIMITS}.costPerRequestUnit of its price, at least one. The same for an HTTP
 * operation (cost-limit.plugin.ts) and a subscription (subscription.server.ts).
 *
 * @param cost - the operation's price, in the units of {@link QUERY_LIMITS}.maxCost.
 * @returns a whole number of requests, at least 1.
 */
export function requestUnitsOf(cost: number): number {
  return Math.max(1, Math.ceil(cost / QUERY_LIMITS.costPerRequestUnit));
}

/** The one message for every rejected operation: limits are not revealed. */
export const QUERY_REJECTED_MESSAGE = 'Query validation error.';

/**
 * Apollo Server settings from GraphQL Armor: depth, alias and directive limits as
 * validation rules, field suggestions blocked in production, batching off, no stack traces.
 * Armor's own cost rule is off: the cost model is costLimitPlugin's (cost-limit.plugin.ts), the one that
 * knows `limit`.
 *
 * @param production - true hides field suggestions ("Did you mean …?").
 */
export function armorSettings(production: boolean) {
  const hidden = { exposeLimits: false, errorMessage: QUERY_REJECTED_MESSAGE } as const;
  return new ApolloArmor({
    maxDepth: { n: QUERY_LIMITS.maxDepth, ignoreIntrospection: true, flattenFragments: true, ...hidden },
    // Armor leaves `__typename` aliases out by default: they are counted like any other.
    maxAliases: { n: QUERY_LIMITS.maxAliases, allowList: [], ...hidden },
    // Armor's token check re-parses in a hook and turns syntax errors into 500s: graphql-js's
    // own `maxTokens` parse option does it instead (see `parseOptions` below).
    maxTokens: { enabled: false },
    maxDirectives: { n: QUERY_LIMITS.maxDirectives, ...hidden },
    costLimit: { enabled: false },
    blockFieldSuggestion: { enabled: production },
  }).protect();
}

/** graphql-js parse options for Apollo: the token limit, enforced while parsing. */
export const PARSE_OPTIONS = Object.freeze({ maxTokens: QUERY_LIMITS.maxTokens });

/**
 * Gives every limit rejection the same message: hides the token limit that graphql-js writes
 * into its parse error, and Armor's misleading "Syntax Error:" prefix.
 *
 * @returns the client-facing message for a parse error.
 */
export function withoutLimits(message: string): string {
  // graphql-js says "more that N tokens"; Armor prefixes its own message with "Syntax Error: ".
  return /contains more tha[nt] \d+ tokens|^Syntax Error: Query validation error\.$/.test(message) ? QUERY_REJECTED_MESSAGE : message;
}
