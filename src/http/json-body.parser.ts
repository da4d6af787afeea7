import type { FastifyInstance } from 'fastify';
import { isSafeNumber, parse } from 'lossless-json';
import { UnsafeJsonNumber } from '../validation/json-number';

/** Fastify's own error for an empty body, kept so the answer is unchanged (400 BAD_REQUEST). */
class JsonBodyError extends Error {
  readonly statusCode = 400;
}

// Strict: bytes that are not UTF-8 throw instead of becoming U+FFFD. The BOM is kept in the text
// (ignoreBOM), so a body that starts with one stays malformed JSON, as with Fastify's decoding.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Replaces Fastify's JSON body parser, for both surfaces, with one that never rounds a
 * number: `JSON.parse` would turn `9007199254740993` or `1.0000000000000001` into a nearby
 * number that then passes the input rules. Here a number that a JavaScript number cannot hold
 * exactly stays an `UnsafeJsonNumber` (its text), which every numeric rule (class-validator's
 * `@IsInt`, GraphQL's `SafeInt`) refuses with 400 BAD_USER_INPUT, showing the number as sent.
 *
 * The body is decoded as strict UTF-8 (RFC 8259 section 8.1): bytes that are not UTF-8 (an
 * invalid byte, an overlong or truncated sequence, an encoded surrogate) answer 400
 * BAD_REQUEST instead of being replaced with U+FFFD and stored (docs/decisions.md: well-formed
 * Unicode). Malformed JSON and an empty body answer 400 BAD_REQUEST, as before. Each surface's
 * error handler renders the error (REST: the Error body; GraphQL: a GraphQL error).
 */
export function parseJsonExactly(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      return done(new JsonBodyError('Body is not valid UTF-8.'));
    }
    if (text.trim() === '') return done(new JsonBodyError("Body cannot be empty when content-type is set to 'application/json'"));
    try {
      done(
        null,
        parse(text, null, (value) => (isSafeNumber(value) ? Number(value) : new UnsafeJsonNumber(value))),
      );
    } catch (error) {
      done(new JsonBodyError(`Body is not valid JSON: ${(error as Error).message}`));
    }
  });
}
