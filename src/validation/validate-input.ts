import { ValidationError, getMetadataStorage, validate } from 'class-validator';
import { AppError } from '../errors/error-catalogue';

/**
 * One message per property: "is required" when the value is missing, otherwise the first
 * rule, in source order, that the value breaks. class-validator checks `@IsDefined` first
 * and then runs a property's other decorators bottom-up, so that rule is the last one
 * in `constraints`.
 */
function describe(errors: ValidationError[], prefix = ''): string[] {
  return errors.flatMap((error) => {
    const property = `${prefix}${error.property}`;
    const constraints = error.constraints ?? {};
    const first = constraints.isDefined ?? Object.values(constraints).at(-1);
    // class-validator phrases messages with the bare property; keep nested paths readable.
    const own = first === undefined ? [] : [first.startsWith(error.property) ? property + first.slice(error.property.length) : first];
    return [...own, ...describe(error.children ?? [], `${property}.`)];
  });
}

/** Each input class's declared properties, read from class-validator's metadata once (decorators run at load time). */
const DECLARED = new WeakMap<object, ReadonlySet<string>>();

function declaredProperties(type: new () => object): ReadonlySet<string> {
  let declared = DECLARED.get(type);
  if (!declared) {
    declared = new Set(
      getMetadataStorage()
        .getTargetValidationMetadatas(type, '', true, false)
        .map((metadata) => metadata.propertyName),
    );
    DECLARED.set(type, declared);
  }
  return declared;
}

/**
 * Builds an instance of an input class from plain values and checks it against the class's
 * class-validator rules. The rules are declared once, on the input classes; both surfaces
 * reach them through the pet operations, which call this.
 *
 * Unknown properties are rejected (not stripped), so `{ "id": 7, … }` is a 400, not a
 * silently ignored field. Property initialisers on the class supply defaults for absent keys.
 *
 * @param type - the input class (`@InputType`/`@ArgsType` with class-validator decorators).
 * @param values - what the client sent, unchecked: a GraphQL args object, or a parsed REST
 *   body or query; anything that is not a plain object (an array, a string, null) is refused.
 * @returns a validated instance of `type`.
 * @throws AppError BAD_USER_INPUT listing every violation, when a rule fails.
 */
export async function validateInput<T extends object>(type: new () => T, values: unknown): Promise<T> {
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    const got = Array.isArray(values) ? 'an array' : values === null ? 'null' : values === undefined ? 'nothing' : `a ${typeof values}`;
    throw new AppError('BAD_USER_INPUT', `Invalid input: expected an object, got ${got}.`);
  }
  // Only the class's declared properties are copied: a key such as `__proto__`, `constructor`
  // or `hasOwnProperty` is refused here, before it can touch the instance.
  const declared = declaredProperties(type);
  const unknown = Object.keys(values).filter((key) => !declared.has(key));
  if (unknown.length > 0) {
    throw new AppError('BAD_USER_INPUT', `Invalid input: ${unknown.map((key) => `property ${key} should not exist`).join('; ')}.`);
  }
  const input = new type();
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined) (input as Record<string, unknown>)[key] = value;
  }
  const errors = await validate(input, {
    // Undeclared keys were refused above, so no whitelist is needed here.
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
  });
  if (errors.length > 0) {
    throw new AppError('BAD_USER_INPUT', `Invalid input: ${describe(errors).join('; ')}.`);
  }
  return input;
}
