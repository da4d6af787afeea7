import type { ValueTransformer } from 'typeorm';

/** An int64 (MySQL: decimal string, SQLite: number) as a number; RangeError rather than rounding beyond ±(2^53-1). */
export function toSafeInteger(value: string | number): number {
  const number = typeof value === 'number' ? value : Number(value);
  if (!Number.isSafeInteger(number) || (typeof value === 'string' && String(number) !== value.trim())) {
    throw new RangeError(`int64 value ${value} is outside the exactly representable range`);
  }
  return number;
}

export const int64Transformer: ValueTransformer = {
  to: (value: number | undefined | null) => value,
  from: (value: string | number | null) => (value === null ? null : toSafeInteger(value)),
};
