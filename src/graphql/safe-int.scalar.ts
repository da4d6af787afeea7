import { GraphQLError, GraphQLScalarType } from 'graphql';
import { GraphQLSafeInt } from 'graphql-scalars';
import { isUnsafeInteger } from '../validation/json-number';

/**
 * graphql-scalars' `SafeInt`, but an out-of-range variable (an `UnsafeJsonNumber` from the body
 * parser) is refused by its digits, not as an object. docs/graphql.md "Why `ID` and `SafeInt`".
 */
export const SafeIntScalar = new GraphQLScalarType({
  ...GraphQLSafeInt.toConfig(),
  parseValue(value) {
    if (isUnsafeInteger(value)) throw new GraphQLError(`SafeInt cannot represent unsafe integer value: ${value.value}`);
    return GraphQLSafeInt.parseValue(value);
  },
});
