import { AppError } from '../errors/error-catalogue';
import { IDEMPOTENCY_LIMITS } from '../limits';

const KEY_PATTERN = new RegExp(IDEMPOTENCY_LIMITS.keyPattern);

/**
 * Checks an `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header); an array is a repeated header.
 * @throws AppError BAD_USER_INPUT when repeated, empty, too long or not printable ASCII.
 */
export function parseIdempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY_PATTERN.test(value) || value.length > IDEMPOTENCY_LIMITS.maxKeyLength) {
    throw new AppError('BAD_USER_INPUT', `Invalid input: Idempotency-Key must be 1 to ${IDEMPOTENCY_LIMITS.maxKeyLength} printable ASCII characters.`);
  }
  return value;
}
