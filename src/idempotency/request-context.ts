import { AppError } from '../errors/error-catalogue';
import { IDEMPOTENCY_LIMITS } from './idempotency.limits';

const KEY_PATTERN = new RegExp(IDEMPOTENCY_LIMITS.keyPattern);

/**
 * What an operation may know of the HTTP request that carried it, the same for both surfaces:
 * GraphQL passes it as the resolver context, REST passes it to the resolver method.
 */
export interface RequestContext {
  request: {
    headers: Record<string, string | string[] | undefined>;
    /** Set by the auth hook. */
    apiKeyId?: number;
  };
}

/**
 * Reads the `Idempotency-Key` header.
 *
 * @returns the key, or undefined when the header is absent.
 * @throws AppError BAD_USER_INPUT when it is repeated, empty, longer than
 *   IDEMPOTENCY_LIMITS.maxKeyLength characters or not printable ASCII.
 */
export function idempotencyKeyOf({ request }: RequestContext): string | undefined {
  const value = request.headers['idempotency-key'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY_PATTERN.test(value) || value.length > IDEMPOTENCY_LIMITS.maxKeyLength) {
    throw new AppError('BAD_USER_INPUT', `Invalid input: Idempotency-Key must be 1 to ${IDEMPOTENCY_LIMITS.maxKeyLength} printable ASCII characters.`);
  }
  return value;
}
