/**
 * The GraphQL type of the integer fields that hold an int64 within ±(2^53-1) (`categoryId`),
 * for type-graphql's `@Field(() => SafeInt)`. The pet operations know no GraphQL, so this is a
 * name only: the GraphQL adapter maps it to its `SafeInt` scalar (graphql/safe-int.scalar.ts)
 * through `buildSchema`'s `scalarsMap`. docs/graphql.md "Why `ID` and `SafeInt`".
 */
export abstract class SafeInt {}
