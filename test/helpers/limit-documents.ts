/**
 * GraphQL documents built at or past each document limit (docs/security.md "Limits"), for the unit and integration
 * suites. Each is far below the cost limit, so that only the limit under test can refuse it: a field that reads the
 * database costs 100, `__typename` 1.
 */

/** Aliases of one pet's fields. */
export const aliases = (n: number) => `{ pets(limit: 1) { ${Array.from({ length: n }, (_, i) => `a${i}: id`).join(' ')} } }`;
/** Aliases of `__typename`, which count like any other. */
export const typenameAliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `t${i}: __typename`).join(' ')} }`;
/** `n` directives, each on an inline fragment. */
export const directives = (n: number) => `{ ${'... @include(if: true) { __typename } '.repeat(n)}}`;
/** Exactly n tokens: 6 per fragment, 1 per extra `__typename`, 2 for the braces. */
export const tokens = (n: number) => {
  const fragments = Math.floor((n - 2) / 6);
  return `{ ${'... on Query { __typename } '.repeat(fragments)}${'__typename '.repeat(n - 2 - 6 * fragments)}}`;
};
/** An operation n fields deep (n ≥ 4): `__type { fields { type { ofType … { name } } } }`; the pet fields are only 2 to 4 deep. */
export const depth = (n: number) => `{ __type(name: "Pet") { fields { type { ${'ofType { '.repeat(n - 4)}name${' }'.repeat(n - 4)} } } } }`;
