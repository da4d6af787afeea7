import type { ValueTransformer } from 'typeorm';

/**
 * Converts an int64 read from the database (MySQL BIGINT arrives as a decimal string, SQLite
 * INTEGER as a number) to a JavaScript number, refusing to round (spec: `format: int64`).
 *
 * @param value - a decimal string or a number.
 * @returns the same integer as a number.
 * @throws RangeError when the value is not an integer within ±(2^53-1); such a value cannot
 *   be stored through this service, whose inputs are limited to that range.
 */
export function toSafeInteger(value: string | number): number {
  const number = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(number) || (typeof value === 'string' && String(number) !== value.trim())) {
    throw new RangeError(`int64 value ${value} is outside the exactly representable range`);
  }
  return number;
}

/** TypeORM column transformer for BIGINT columns exposed as JavaScript numbers. */
export const int64Transformer: ValueTransformer = {
  to: (value: number | undefined | null) => value,
  from: (value: string | number | null) => (value === null ? null : toSafeInteger(value)),
};
