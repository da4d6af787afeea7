import { AppError } from '../errors/error-catalogue';
import { IDEMPOTENCY_LIMITS } from '../limits';

const KEY_PATTERN = new RegExp(IDEMPOTENCY_LIMITS.keyPattern);

/**
 * Checks an `Idempotency-Key` header value (draft-ietf-httpapi-idempotency-key-header) against
 * the rule of {@link IDEMPOTENCY_LIMITS}.
 *
 * @param value - the header as the HTTP server parsed it: absent, one string, or several (repeated).
 * @returns the key, or undefined when the header is absent.
 * @throws AppError BAD_USER_INPUT when it is repeated, empty, longer than
 *   IDEMPOTENCY_LIMITS.maxKeyLength characters or not printable ASCII.
 */
export function parseIdempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY_PATTERN.test(value) || value.length > IDEMPOTENCY_LIMITS.maxKeyLength) {
    throw new AppError('BAD_USER_INPUT', `Invalid input: Idempotency-Key must be 1 to ${IDEMPOTENCY_LIMITS.maxKeyLength} printable ASCII characters.`);
  }
  return value;
}
