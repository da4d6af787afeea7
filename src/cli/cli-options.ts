import { type Command, CommanderError, InvalidArgumentError } from 'commander';
import { AppError } from '../errors/error-catalogue';
import { parsePositiveInteger } from '../validation/positive-integer';

/** Commander's parser for a positive integer, by the one rule of {@link parsePositiveInteger}; throws InvalidArgumentError. */
export function positiveIntegerArgument(value: string): number {
  const number = parsePositiveInteger(value);
  if (number === undefined) throw new InvalidArgumentError('must be a positive integer.');
  return number;
}

/** Exit status of a usage error (a bad flag or argument, a value its rule refuses): nothing was stored. */
export const USAGE_ERROR = 2;

/** Commander's parser for an option checked by `rule`, whose thrown message becomes commander's InvalidArgumentError (a usage error). */
export function byRule<T>(rule: (text: string) => T): (text: string) => T {
  return (text) => {
    try {
      return rule(text);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
  };
}

/**
 * Runs `program` on the process's arguments and exits as the CLIs document: 0 for help and version, {@link USAGE_ERROR}
 * for a usage error (commander's, a RangeError thrown by a rule, or an operation's AppError BAD_USER_INPUT: nothing
 * stored), 1 for anything else (NOT_FOUND among them), its message on stderr after `name:`.
 */
export function runCli(program: Command, name: string): void {
  program.parseAsync(process.argv).catch((error: unknown) => {
    if (error instanceof CommanderError) {
      // Help and version exit 0; commander has printed the usage error already.
      process.exit(error.exitCode === 0 ? 0 : USAGE_ERROR);
    }
    process.stderr.write(`${name}: ${(error as Error).message ?? error}\n`);
    const usage = error instanceof RangeError || (error instanceof AppError && error.code === 'BAD_USER_INPUT');
    process.exit(usage ? USAGE_ERROR : 1);
  });
}
