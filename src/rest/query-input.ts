import { parsePositiveInteger } from '../validation/positive-integer';

/** A plainly written integer becomes a number so the input rules can judge it; anything else stays a string and fails them. */
function fromQueryValue(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  return value === '0' ? 0 : (parsePositiveInteger(value) ?? value);
}

/**
 * A REST query string as the operations' input (listPets, listEvents): each plainly written integer (`limit=20`) as a
 * number, every other value as sent, for the operation's rules to judge (docs/rest.md).
 * @param query - Fastify's parsed `request.query`: field name → string (or array when repeated).
 * @returns a new object; never throws.
 */
export function queryInput(query: unknown): Record<string, unknown> {
  return Object.fromEntries(Object.entries(query as Record<string, unknown>).map(([key, value]) => [key, fromQueryValue(value)]));
}
