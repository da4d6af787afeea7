import { ValidateBy, buildMessage } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { parsePositiveInteger } from './positive-integer';
import { PET_LIMITS } from '../limits';

/** The message of `@IsDefined` on every input: `name is required`. */
export const REQUIRED = Object.freeze({ message: '$property is required' });

/** An identifier in OpenAPI (spec "Pet.id"): int64 kept within the safe range. */
export const IDENTIFIER_SCHEMA = Object.freeze({ type: 'integer', format: 'int64', minimum: 1, maximum: PET_LIMITS.maxInt64 });

/** Applies decorators as a stack written in this order would be (TypeScript applies the bottom one first). */
export function stacked(...decorators: PropertyDecorator[]): PropertyDecorator {
  return (target, property) => [...decorators].reverse().forEach((decorate) => decorate(target, property));
}

/** class-validator-jsonschema's decorator, typed as a property decorator (one per property: it keeps the last). */
export function jsonSchema(keywords: Parameters<typeof JSONSchema>[0]): PropertyDecorator {
  return (target, property) => JSONSchema(keywords)(target, property as string);
}

/**
 * A decimal string naming a positive identifier up to 2^53-1 (no sign, no leading zero): a pet's, a key's, a webhook
 * endpoint's or a recovery's id, in a path or from a CLI argument.
 */
export function IsIdentifier(): PropertyDecorator {
  return stacked(
    ValidateBy({
      name: 'isIdentifier',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && parsePositiveInteger(value) !== undefined,
        defaultMessage: buildMessage((each) => `${each}$property must be a positive integer no larger than ${PET_LIMITS.maxInt64}`),
      },
    }),
    jsonSchema({ ...IDENTIFIER_SCHEMA }),
  );
}

/**
 * At most `max` code points, the unit of utf8mb4 `VARCHAR(max)` and of JSON Schema's `maxLength`; class-validator's
 * `@MaxLength` skips variation selectors, so names it passes can overflow the column (docs/decisions.md). `schema`: more
 * of the property's JSON Schema (class-validator-jsonschema keeps one JSONSchema decorator per property).
 */
export function MaxCodePoints(max: number, schema: Record<string, unknown> = {}): PropertyDecorator {
  return stacked(
    ValidateBy({
      name: 'maxCodePoints',
      constraints: [max],
      validator: {
        validate: (value: unknown) => typeof value === 'string' && [...value].length <= max,
        defaultMessage: buildMessage((each) => `${each}$property must be at most $constraint1 characters (Unicode code points)`),
      },
    }),
    jsonSchema({ ...schema, maxLength: max }),
  );
}
