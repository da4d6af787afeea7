import type { FastifyInstance } from 'fastify';
import { int64Transformer, toSafeInteger } from '../../src/database/int64';
import { toAppError } from '../../src/errors/error-catalogue';
import { parseJsonExactly } from '../../src/http/json-body.parser';
import { UnsafeJsonNumber, isUnsafeInteger } from '../../src/validation/json-number';

/**
 * int64 as the database returns it (toSafeInteger) and JSON numbers as clients send them (the body parser of both
 * surfaces), in process: the parser is taken from the registration parseJsonExactly makes, with no Fastify server.
 */

type Done = (error: Error | null, body?: unknown) => void;
type Parser = (request: unknown, body: Buffer, done: Done) => void;

/** The content-type parser parseJsonExactly registers, and what it registered it for. */
function registeredParser(): { removed: string[]; added: Array<{ type: string; options: unknown }>; parse: Parser } {
  const removed: string[] = [];
  const added: Array<{ type: string; options: unknown }> = [];
  let parser: Parser | undefined;
  const app = {
    removeContentTypeParser: (type: string) => void removed.push(type),
    addContentTypeParser: (type: string, options: unknown, fn: Parser) => {
      added.push({ type, options });
      parser = fn;
    },
  };
  parseJsonExactly(app as unknown as FastifyInstance);
  return { removed, added, parse: parser! };
}

const { parse } = registeredParser();

/** The body the parser hands on for these bytes, or its error. */
function parseBody(body: string | Buffer): { body?: unknown; error?: Error & { statusCode?: number } } {
  let outcome: { body?: unknown; error?: Error } | undefined;
  parse({}, typeof body === 'string' ? Buffer.from(body, 'utf8') : body, (error, parsed) => {
    outcome = error ? { error } : { body: parsed };
  });
  if (!outcome) throw new Error('the parser did not call done synchronously');
  return outcome;
}

/** The value of `n` in `{"n": <text>}`. */
const numberIn = (text: string) => (parseBody(`{"n": ${text}}`).body as { n: unknown }).n;

describe('toSafeInteger (int64 columns: MySQL sends decimal strings, SQLite numbers)', () => {
  test.each([
    ['1', 1],
    [1, 1],
    ['-5', -5],
    [0, 0],
    ['0', 0],
    [' 42 ', 42],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
    [9007199254740991, Number.MAX_SAFE_INTEGER],
    ['-9007199254740991', -Number.MAX_SAFE_INTEGER],
  ])('when given %p, then %p', (value, expected) => {
    expect(toSafeInteger(value)).toBe(expected);
  });

  test.each([
    '9007199254740992',
    '9007199254740993',
    '-9007199254740992',
    '18446744073709551615',
    9007199254740992,
    2 ** 64,
    1.5,
    '1.5',
    '1.0',
    '01',
    '1e3',
    '0x10',
    '-0',
    '',
    ' ',
    'abc',
    Number.NaN,
    Number.POSITIVE_INFINITY,
  ])('when given %p, then RangeError instead of a rounded number', (value) => {
    expect(() => toSafeInteger(value)).toThrow(new RangeError(`int64 value ${value} is outside the exactly representable range`));
  });

  test('when the transformer reads a column, then null stays null and int64 text becomes a number, or RangeError', () => {
    expect(int64Transformer.from(null)).toBeNull();
    expect(int64Transformer.from('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
    expect(() => int64Transformer.from('9007199254740993')).toThrow(RangeError);
  });

  test('when the transformer writes a column, then the value goes as is', () => {
    expect([int64Transformer.to(5), int64Transformer.to(null), int64Transformer.to(undefined)]).toEqual([5, null, undefined]);
  });
});

describe('parseJsonExactly: the registration', () => {
  test("when installed, then it replaces Fastify's application/json parser, reading the body as a buffer", () => {
    const { removed, added } = registeredParser();
    expect(removed).toEqual(['application/json']);
    expect(added).toEqual([{ type: 'application/json', options: { parseAs: 'buffer' } }]);
  });
});

describe('parseJsonExactly: numbers', () => {
  test.each([
    ['0', 0],
    ['-1', -1],
    ['42', 42],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
    ['-9007199254740991', -Number.MAX_SAFE_INTEGER],
    ['1.5', 1.5],
    ['0.1', 0.1],
    ['1.0', 1],
    ['1e3', 1000],
    ['1E+2', 100],
    ['2.5e-3', 0.0025],
    ['-0', -0],
  ])('when a body holds %s, then a plain number %p', (text, expected) => {
    const value = numberIn(text);
    expect(typeof value).toBe('number');
    expect(value).toBe(expected);
  });

  test.each([
    ['2^53', '9007199254740992', true],
    ['2^53 + 1', '9007199254740993', true],
    ['-(2^53 + 1)', '-9007199254740993', true],
    ['2^64 - 1', '18446744073709551615', true],
    ['2^53 written with a fraction', '9007199254740992.0', false],
    ['an integer in exponent form past 2^53', '1e16', false],
    ['the largest double, an integer past 2^53', '1.7976931348623157e308', false],
    ['an overflow', '1e400', false],
    ['a fraction a double rounds away', '1.0000000000000001', false],
    ['more digits than a double holds', '0.12345678901234567890', false],
    ['an underflow', '1e-400', false],
  ])('when a body holds %s (%s), then an UnsafeJsonNumber keeping the text; an unsafe integer: %p', (_case, text, unsafeInteger) => {
    const value = numberIn(text);
    expect(value).toBeInstanceOf(UnsafeJsonNumber);
    expect((value as UnsafeJsonNumber).value).toBe(text);
    expect(isUnsafeInteger(value)).toBe(unsafeInteger);
  });

  test('when numbers are nested in arrays and objects, then each is judged on its own', () => {
    const { body } = parseBody('{"a": [1, 9007199254740993, {"b": 2.5}], "c": {"d": 1e400}}');
    expect(body).toEqual({
      a: [1, new UnsafeJsonNumber('9007199254740993'), { b: 2.5 }],
      c: { d: new UnsafeJsonNumber('1e400') },
    });
  });

  test('when the body is a number, a string, null or an array at the top, then it is handed on as such (the input rules judge it)', () => {
    expect(parseBody('7').body).toBe(7);
    expect(parseBody('"x"').body).toBe('x');
    expect(parseBody('null').body).toBeNull();
    expect(parseBody('[1, 2]').body).toEqual([1, 2]);
    expect(parseBody('  {"a": "\\u00e9"}\n').body).toEqual({ a: 'é' });
  });
});

describe('parseJsonExactly: refused bodies (400, so BAD_REQUEST on both surfaces)', () => {
  /** The error, and the catalogue error it becomes. */
  function refused(body: string | Buffer) {
    const { error } = parseBody(body);
    expect(error).toBeInstanceOf(Error);
    const { appError, unexpected } = toAppError(error);
    return { statusCode: error!.statusCode, message: error!.message, body: appError.toBody(), unexpected };
  }

  test.each([
    ['empty', ''],
    ['white space only', ' \r\n\t'],
  ])('when the body is %s, then "Body cannot be empty"', (_case, body) => {
    const message = "Body cannot be empty when content-type is set to 'application/json'";
    expect(refused(body)).toEqual({ statusCode: 400, message, body: { code: 'BAD_REQUEST', message, status: 400 }, unexpected: false });
  });

  test.each([
    ['a lone continuation byte', Buffer.from([0x7b, 0x80, 0x7d])],
    ['a truncated sequence', Buffer.from([0x22, 0xe2, 0x82, 0x22])],
    ['an overlong encoding', Buffer.from([0x22, 0xc0, 0xaf, 0x22])],
    ['a UTF-16 surrogate in UTF-8', Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22])],
    ['Latin-1 text', Buffer.from('{"name": "Jos\xe9"}', 'latin1')],
  ])('when the body has %s (invalid UTF-8), then "Body is not valid UTF-8." rather than U+FFFD', (_case, body) => {
    expect(refused(body)).toEqual({
      statusCode: 400,
      message: 'Body is not valid UTF-8.',
      body: { code: 'BAD_REQUEST', message: 'Body is not valid UTF-8.', status: 400 },
      unexpected: false,
    });
  });

  test.each([
    ['a byte order mark', '\ufeff{"a": 1}'],
    ['a trailing comma', '{"a": 1,}'],
    ['single quotes', "{'a': 1}"],
    ['an unquoted key', '{a: 1}'],
    ['two documents', '{} {}'],
    ['a leading zero', '{"n": 01}'],
    ['a plus sign', '{"n": +1}'],
    ['NaN', '{"n": NaN}'],
    ['a hexadecimal number', '{"n": 0x10}'],
    ['a bare decimal point', '{"n": 1.}'],
    ['a cut-off body', '{"name": "Rex", "categoryId": 1'],
    ['a duplicate key with another value', '{"a": 1, "a": 2}'],
  ])('when the body has %s, then "Body is not valid JSON: …", 400 BAD_REQUEST', (_case, body) => {
    const { statusCode, message, body: errorBody, unexpected } = refused(body);
    expect(statusCode).toBe(400);
    expect(message).toMatch(/^Body is not valid JSON: ./);
    expect(errorBody).toEqual({ code: 'BAD_REQUEST', message, status: 400 });
    expect(unexpected).toBe(false);
  });
});
