import { InvalidArgumentError } from 'commander';
import { parsePositiveInteger } from '../validation/positive-integer';

/** Commander's parser for a positive integer, by the one rule of {@link parsePositiveInteger}; throws InvalidArgumentError. */
export function positiveIntegerArgument(value: string): number {
  const number = parsePositiveInteger(value);
  if (number === undefined) throw new InvalidArgumentError('must be a positive integer.');
  return number;
}
