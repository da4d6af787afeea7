import { InvalidArgumentError } from 'commander';
import { parsePositiveInteger } from '../validation/positive-integer';

/**
 * Commander's argument parser for a positive integer (a count, an id, a number of rounds), by
 * the one rule of {@link parsePositiveInteger}: plain decimal, no sign, no leading zero, at
 * most 2^53-1. Pass it as the parser of `.argument()` or `.option()`; commander prints the
 * refusal after naming the argument or option and the value given.
 *
 * @param value - the text given on the command line.
 * @returns the number.
 * @throws InvalidArgumentError "must be a positive integer." when the text breaks the rule.
 */
export function positiveIntegerArgument(value: string): number {
  const number = parsePositiveInteger(value);
  if (number === undefined) throw new InvalidArgumentError('must be a positive integer.');
  return number;
}
