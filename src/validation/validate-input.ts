import { ValidationError, getMetadataStorage, validateSync } from 'class-validator';
import { AppError } from '../errors/error-catalogue';

/**
 * One message per property (`operations.2.id must be …`): "is required", else the first rule in source order that
 * fails, which is the last in `constraints` as class-validator runs decorators bottom-up.
 */
export function describeViolations(errors: readonly ValidationError[], prefix = ''): string[] {
  return errors.flatMap((error) => {
    const property = `${prefix}${error.property}`;
    const constraints = error.constraints ?? {};
    const first = constraints.isDefined ?? Object.values(constraints).at(-1);
    // class-validator phrases messages with the bare property; keep nested paths readable.
    const own = first === undefined ? [] : [first.startsWith(error.property) ? property + first.slice(error.property.length) : first];
    return [...own, ...describeViolations(error.children ?? [], `${property}.`)];
  });
}

/** Read once: decorators run at load time. */
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
 * An instance of `type` built from the client's `values` and checked against its class-validator rules; the class's
 * initialisers give the defaults. Unknown properties are refused, not stripped, so a misspelt field is a 400.
 * @throws AppError BAD_USER_INPUT listing every violation.
 */
export async function validateInput<T extends object>(type: new () => T, values: unknown): Promise<T> {
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    const got = Array.isArray(values) ? 'an array' : values === null ? 'null' : values === undefined ? 'nothing' : `a ${typeof values}`;
    throw new AppError('BAD_USER_INPUT', `Invalid input: expected an object, got ${got}.`);
  }
  // Refusing undeclared keys first keeps `__proto__` or `constructor` from touching the instance.
  const declared = declaredProperties(type);
  const unknown = Object.keys(values).filter((key) => !declared.has(key));
  if (unknown.length > 0) {
    throw new AppError('BAD_USER_INPUT', `Invalid input: ${unknown.map((key) => `property ${key} should not exist`).join('; ')}.`);
  }
  const input = new type();
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined) (input as Record<string, unknown>)[key] = value;
  }
  // Every rule of the inputs is synchronous: validateSync spares class-validator's promises.
  const errors = validateSync(input, {
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
  });
  if (errors.length > 0) {
    throw new AppError('BAD_USER_INPUT', `Invalid input: ${describeViolations(errors).join('; ')}.`);
  }
  return input;
}
