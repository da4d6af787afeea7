/**
 * The one rule for an identifier or count written as text: a positive integer in plain decimal
 * (no sign, no leading zero, no exponent) that a JavaScript number holds exactly (≤ 2^53-1).
 * Used by the pet id rule, the configuration and the command-line options (cli/cli-options.ts).
 *
 * @param text - the text as received.
 * @returns the number, or undefined when the text breaks the rule.
 */
export function parsePositiveInteger(text: string): number | undefined {
  if (!/^[1-9][0-9]*$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}
