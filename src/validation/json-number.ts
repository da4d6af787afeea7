import { LosslessNumber, isInteger } from 'lossless-json';

/**
 * A JSON number no double holds exactly, kept as the client's text (http/json-body.parser.ts) so no rule sees a nearby
 * number instead; `toJSON` (used by graphql-js's `inspect`) makes messages show that text.
 */
export class UnsafeJsonNumber extends LosslessNumber {
  toJSON(): string {
    return this.value;
  }
}

/** An integer beyond ±(2^53-1) in a JSON body. */
export function isUnsafeInteger(value: unknown): value is UnsafeJsonNumber {
  return value instanceof UnsafeJsonNumber && isInteger(value.value);
}
