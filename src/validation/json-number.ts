import { LosslessNumber, isInteger } from 'lossless-json';

/**
 * A number of a JSON body that a JavaScript number cannot hold exactly (past 2^53, or more
 * digits than a double keeps), kept as the text the client sent (http/json-body.parser.ts), so
 * that no rule sees a nearby number instead. Every numeric rule refuses it; messages show it as
 * that text (`toJSON`, which graphql-js's `inspect` uses), never as a library's object.
 */
export class UnsafeJsonNumber extends LosslessNumber {
  /** @returns the number as the client wrote it, e.g. `"9007199254740993"`. */
  toJSON(): string {
    return this.value;
  }
}

/**
 * Tells whether `value` is an integer of a JSON body too large for a JavaScript number to hold
 * exactly (beyond ±(2^53-1)).
 *
 * @param value - any parsed value.
 */
export function isUnsafeInteger(value: unknown): value is UnsafeJsonNumber {
  return value instanceof UnsafeJsonNumber && isInteger(value.value);
}
