import type { FastifyInstance } from 'fastify';
import { isSafeNumber, LosslessNumber, parse } from 'lossless-json';

/** Fastify's own error for an empty body, kept so the answer is unchanged (400 BAD_REQUEST). */
class JsonBodyError extends Error {
  readonly statusCode = 400;
}

/**
 * Replaces Fastify's JSON body parser, for both surfaces, with one that never rounds a
 * number: `JSON.parse` would turn `9007199254740993` or `1.0000000000000001` into a nearby
 * number that then passes the input rules. Here a number that a JavaScript number cannot hold
 * exactly stays a `LosslessNumber` object, which every numeric rule (class-validator's
 * `@IsInt`, GraphQL's `SafeInt`) refuses with 400 BAD_USER_INPUT.
 *
 * Malformed JSON and an empty body answer 400 BAD_REQUEST, as before.
 */
export function parseJsonExactly(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(new JsonBodyError("Body cannot be empty when content-type is set to 'application/json'"));
    try {
      done(null, parse(text, null, (value) => (isSafeNumber(value) ? Number(value) : new LosslessNumber(value))));
    } catch (error) {
      done(new JsonBodyError(`Body is not valid JSON: ${(error as Error).message}`));
    }
  });
}
