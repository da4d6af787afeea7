/** The one rule for an identifier or count as text: plain decimal (no sign, leading zero or exponent), ≤ 2^53-1; else undefined. */
export function parsePositiveInteger(text: string): number | undefined {
  if (!/^[1-9][0-9]*$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}
