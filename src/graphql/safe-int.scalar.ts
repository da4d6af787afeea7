import { GraphQLError, GraphQLScalarType } from 'graphql';
import { GraphQLSafeInt } from 'graphql-scalars';
import { isUnsafeInteger } from '../validation/json-number';

/**
 * The `SafeInt` scalar of graphql-scalars (an integer within ±(2^53-1)), except that an integer
 * variable beyond that range, which the JSON body parser keeps as an {@link UnsafeJsonNumber},
 * is refused as the unsafe integer it is, by its digits ("SafeInt cannot represent unsafe
 * integer value: 9007199254740993"), not as a non-integer object. docs/graphql.md "Why `ID` and `SafeInt`".
 * The fields typed `SafeInt` in pets/ (pets/safe-int.type.ts) get it through `scalarsMap` (schema.ts).
 *
 * @throws GraphQLError from `parseValue` and `parseLiteral` for a value outside the range or not an integer.
 */
export const SafeIntScalar = new GraphQLScalarType({
  ...GraphQLSafeInt.toConfig(),
  parseValue(value) {
    if (isUnsafeInteger(value)) throw new GraphQLError(`SafeInt cannot represent unsafe integer value: ${value.value}`);
    return GraphQLSafeInt.parseValue(value);
  },
});
