/** A name only: pets/ knows no GraphQL, so the adapter maps it to its scalar (`scalarsMap`). docs/graphql.md "Why `ID` and `SafeInt`". */
export abstract class SafeInt {}
