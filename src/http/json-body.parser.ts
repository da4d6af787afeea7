import type { FastifyInstance } from 'fastify';
import { isSafeNumber, parse } from 'lossless-json';
import { UnsafeJsonNumber } from '../validation/json-number';

/** statusCode 400, like Fastify's own body errors, so both surfaces answer BAD_REQUEST. */
class JsonBodyError extends Error {
  readonly statusCode = 400;
}

// Fatal: invalid UTF-8 throws instead of becoming U+FFFD. ignoreBOM keeps the BOM in the text,
// so a body that starts with one stays malformed JSON, as with Fastify's decoding.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Replaces Fastify's JSON body parser, for both surfaces, with one that never rounds a number:
 * `JSON.parse` would turn `9007199254740993` into a nearby number that then passes the input
 * rules. An inexact number stays an `UnsafeJsonNumber`, which every numeric rule refuses.
 * Invalid UTF-8, malformed JSON and an empty body: 400 BAD_REQUEST (RFC 8259 section 8.1).
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
