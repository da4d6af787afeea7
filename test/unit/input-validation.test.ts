import 'reflect-metadata';
import { inspect } from 'graphql/jsutils/inspect';
import { LosslessNumber } from 'lossless-json';
import { AppError } from '../../src/errors/error-catalogue';
import { PetEventsArgs } from '../../src/events/pet-event.inputs';
import { PetsConnectionArgs } from '../../src/graphql/pet-connection.types';
import { PET_LIMITS } from '../../src/limits';
import { encodeEventCursor, encodePetCursor } from '../../src/pets/pet-cursor';
import { PetStatus } from '../../src/pets/pet-status.enum';
import { ListPetsArgs, NewPetInput, PetIdArgs } from '../../src/pets/pet.inputs';
import { UnsafeJsonNumber, isUnsafeInteger } from '../../src/validation/json-number';
import { parsePositiveInteger } from '../../src/validation/positive-integer';
import { validateInput } from '../../src/validation/validate-input';

/**
 * The one set of input rules (PetService calls validateInput for both surfaces; the connection resolver for
 * petsConnection), run in process: each input class, each rule's message, and the rules of validate-input itself.
 */

/** The message validateInput refuses `values` with, as an AppError BAD_USER_INPUT (400); fails the test otherwise. */
async function refusal(type: new () => object, values: unknown): Promise<string> {
  try {
    await validateInput(type, values);
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect({ code: (error as AppError).code, status: (error as AppError).status }).toEqual({ code: 'BAD_USER_INPUT', status: 400 });
    return (error as AppError).message;
  }
  throw new Error(`accepted: ${JSON.stringify(values)}`);
}

const VISIBLE_NAME = '$property must have a visible character and no control characters or unpaired surrogates';
const nameMessage = (rule: string) => `Invalid input: ${rule.replace('$property', 'name')}.`;

describe('parsePositiveInteger (identifiers and counts as text)', () => {
  test.each([
    ['1', 1],
    ['7', 7],
    ['100', 100],
    ['9007199254740991', Number.MAX_SAFE_INTEGER],
  ])('when given %p, then %p', (text, value) => {
    expect(parsePositiveInteger(text)).toBe(value);
  });

  test.each(['', '0', '00', '01', '-1', '+1', '1.0', '1.5', '1e3', '0x10', ' 1', '1 ', '١', '9007199254740992', '99999999999999999999', 'Infinity', 'NaN'])(
    'when given %p, then undefined',
    (text) => {
      expect(parsePositiveInteger(text)).toBeUndefined();
    },
  );
});

describe('UnsafeJsonNumber and isUnsafeInteger', () => {
  test.each([
    ['9007199254740992', true],
    ['9007199254740993', true],
    ['-9007199254740993', true],
    ['18446744073709551615', true],
    ['1.0000000000000001', false],
    ['1e400', false],
    ['9007199254740993.0', false],
  ])('when an UnsafeJsonNumber holds %p, then isUnsafeInteger is %p', (text, unsafe) => {
    expect(isUnsafeInteger(new UnsafeJsonNumber(text))).toBe(unsafe);
  });

  test.each([Number('9007199254740993'), '9007199254740993', new LosslessNumber('9007199254740993'), null, undefined, {}])(
    'when given %p (not an UnsafeJsonNumber), then isUnsafeInteger is false',
    (value) => {
      expect(isUnsafeInteger(value)).toBe(false);
    },
  );

  test("when shown in a message (graphql-js's inspect, toJSON), then it is the client's digits, not an object", () => {
    const value = new UnsafeJsonNumber('9007199254740993');
    expect(inspect(value)).toBe('9007199254740993');
    expect(value.toJSON()).toBe('9007199254740993');
    expect(value.value).toBe('9007199254740993');
  });
});

describe('validateInput', () => {
  test.each([
    [[], 'an array'],
    [null, 'null'],
    [undefined, 'nothing'],
    ['Rex', 'a string'],
    [5, 'a number'],
    [true, 'a boolean'],
  ])('when given %p instead of an object, then BAD_USER_INPUT "expected an object, got %s"', async (values, got) => {
    expect(await refusal(NewPetInput, values)).toBe(`Invalid input: expected an object, got ${got}.`);
  });

  test('when a property is not declared, then it is refused, not stripped', async () => {
    expect(await refusal(NewPetInput, { name: 'Rex', categoryId: 1, id: 5 })).toBe('Invalid input: property id should not exist.');
  });

  test('when several properties are not declared, then each is named, in the order sent', async () => {
    expect(await refusal(NewPetInput, { nam: 'Rex', categoryId: 1, extra: true })).toBe(
      'Invalid input: property nam should not exist; property extra should not exist.',
    );
  });

  test.each([
    ['__proto__', '{"name":"Rex","categoryId":1,"__proto__":{"status":"sold"}}'],
    ['constructor', '{"name":"Rex","categoryId":1,"constructor":{"prototype":{}}}'],
  ])('when a body holds %s, then it is refused before it can touch the instance', async (key, json) => {
    expect(await refusal(NewPetInput, JSON.parse(json))).toBe(`Invalid input: property ${key} should not exist.`);
    expect(Object.prototype).not.toHaveProperty('status');
  });

  test('when an unknown property comes with bad values, then only the unknown property is reported', async () => {
    expect(await refusal(NewPetInput, { name: '', offset: 1 })).toBe('Invalid input: property offset should not exist.');
  });

  test('when a value is undefined, then it is as if absent: the default applies', async () => {
    const input = await validateInput(NewPetInput, { name: 'Rex', categoryId: 1, status: undefined });
    expect(input.status).toBe(PetStatus.available);
  });

  test('when valid, then an instance of the class with its values and defaults', async () => {
    const input = await validateInput(NewPetInput, { name: 'Rex', categoryId: 3 });
    expect(input).toBeInstanceOf(NewPetInput);
    expect({ ...input }).toEqual({ name: 'Rex', categoryId: 3, status: 'available' });
  });

  test('when several properties break rules, then one message per property, joined by "; ", in declaration order', async () => {
    expect(await refusal(NewPetInput, {})).toBe('Invalid input: name is required; categoryId is required.');
    expect(await refusal(NewPetInput, { status: 'lost', categoryId: 0, name: 5 })).toBe(
      'Invalid input: name must be a string; categoryId must not be less than 1; status must be one of: available, pending, sold.',
    );
  });
});

describe('NewPetInput: name', () => {
  const max = PET_LIMITS.nameMaxLength;

  test.each([
    ['one letter', 'R'],
    [`${max} letters`, 'x'.repeat(max)],
    [`${max} astral letters (${max * 2} UTF-16 units)`, '𝒳'.repeat(max)],
    ['variation selectors (not counted by validator.js)', '❤️'.repeat(max / 2)],
    ['a ZWJ sequence', '👩‍👩‍👧'],
    ['a leading zero-width space before a letter', '\u200bRex'],
    ['a no-break space inside', 'Bo\u00a0Bo'],
    ['a combining accent', 'e\u0301'],
    ['non-Latin letters', '李 Ünal'],
  ])('when it is %s, then it is accepted unchanged', async (_case, name) => {
    expect((await validateInput(NewPetInput, { name, categoryId: 1 })).name).toBe(name);
  });

  test.each([
    [`${max + 1} letters`, 'x'.repeat(max + 1)],
    [`${max + 1} astral letters`, '𝒳'.repeat(max + 1)],
    [`${max} code points and a variation selector`, 'x'.repeat(max - 1) + '❤️'],
  ])('when it is %s, then "at most 100 characters (Unicode code points)"', async (_case, name) => {
    expect(await refusal(NewPetInput, { name, categoryId: 1 })).toBe(nameMessage(`$property must be at most ${max} characters (Unicode code points)`));
  });

  test.each([
    ['empty', ''],
    ['a space', ' '],
    ['tabs and newlines', '\t\n'],
    ['a zero-width space', '\u200b'],
    ['a word joiner', '\u2060'],
    ['a byte order mark', '\ufeff'],
    ['a lone variation selector', '\ufe0f'],
    ['a soft hyphen', '\u00ad'],
    ['a Hangul filler', '\u3164'],
    ['an ideographic space', '\u3000'],
    ['a no-break space', '\u00a0'],
    ['a control character inside', 'Re\u0000x'],
    ['a DEL inside', 'Re\u007fx'],
    ['a newline inside', 'Re\nx'],
    ['an unpaired high surrogate', 'Rex\ud800'],
    ['an unpaired low surrogate', '\udc00Rex'],
  ])('when it is %s, then "must have a visible character and no control characters or unpaired surrogates"', async (_case, name) => {
    expect(await refusal(NewPetInput, { name, categoryId: 1 })).toBe(nameMessage(VISIBLE_NAME));
  });

  test.each([
    ['missing', {}, 'name is required'],
    ['null', { name: null }, 'name is required'],
    ['a number', { name: 5 }, 'name must be a string'],
    ['an array', { name: ['Rex'] }, 'name must be a string'],
  ])('when it is %s, then "%s"', async (_case, values, message) => {
    expect(await refusal(NewPetInput, { categoryId: 1, ...values })).toBe(`Invalid input: ${message}.`);
  });
});

describe('NewPetInput: categoryId', () => {
  test.each([1, 2, Number.MAX_SAFE_INTEGER])('when it is %p, then it is accepted', async (categoryId) => {
    expect((await validateInput(NewPetInput, { name: 'Rex', categoryId })).categoryId).toBe(categoryId);
  });

  test.each([
    [0, 'categoryId must not be less than 1'],
    [-1, 'categoryId must not be less than 1'],
    [1.5, 'categoryId must be an integer number'],
    ['7', 'categoryId must be an integer number'],
    [true, 'categoryId must be an integer number'],
    [Number.POSITIVE_INFINITY, 'categoryId must be an integer number'],
    [Number.NaN, 'categoryId must be an integer number'],
    [null, 'categoryId is required'],
    [new UnsafeJsonNumber('9007199254740992'), 'categoryId must be an integer from 1 to 9007199254740991'],
    [new UnsafeJsonNumber('9007199254740993'), 'categoryId must be an integer from 1 to 9007199254740991'],
    [new UnsafeJsonNumber('-9007199254740993'), 'categoryId must be an integer from 1 to 9007199254740991'],
    [new UnsafeJsonNumber('1.0000000000000001'), 'categoryId must be an integer number'],
  ])('when it is %p, then "%s"', async (categoryId, message) => {
    expect(await refusal(NewPetInput, { name: 'Rex', categoryId })).toBe(`Invalid input: ${message}.`);
  });

  test('when it is beyond 2^53 but given as a rounded number, then Max refuses it (the body parser never rounds, see int64.test.ts)', async () => {
    expect(await refusal(NewPetInput, { name: 'Rex', categoryId: 2 ** 53 })).toBe('Invalid input: categoryId must not be greater than 9007199254740991.');
  });
});

describe('NewPetInput: status', () => {
  test.each(Object.values(PetStatus))('when it is %p, then it is kept', async (status) => {
    expect((await validateInput(NewPetInput, { name: 'Rex', categoryId: 1, status })).status).toBe(status);
  });

  test.each(['SOLD', 'Available', '', 'lost', null, 1])('when it is %p, then "must be one of: available, pending, sold"', async (status) => {
    expect(await refusal(NewPetInput, { name: 'Rex', categoryId: 1, status })).toBe('Invalid input: status must be one of: available, pending, sold.');
  });
});

describe.each([
  ['ListPetsArgs', ListPetsArgs as new () => object, 'limit'],
  ['PetsConnectionArgs', PetsConnectionArgs as new () => object, 'first'],
] as const)('%s: the page size', (_name, type, size) => {
  test(`when ${size} is absent, then ${PET_LIMITS.listDefault}`, async () => {
    expect(await validateInput(type, {})).toEqual({ [size]: PET_LIMITS.listDefault });
  });

  test.each([PET_LIMITS.listMin, 50, PET_LIMITS.listMax])(`when ${size} is %p, then it is kept`, async (value) => {
    expect(await validateInput(type, { [size]: value })).toEqual({ [size]: value });
  });

  test.each([
    [0, 'must not be less than 1'],
    [-5, 'must not be less than 1'],
    [PET_LIMITS.listMax + 1, 'must not be greater than 100'],
    [1.5, 'must be an integer number'],
    ['5', 'must be an integer number'],
    ['abc', 'must be an integer number'],
    [null, 'must be an integer number'],
  ])(`when ${size} is %p, then "${size} %s"`, async (value, message) => {
    expect(await refusal(type, { [size]: value })).toBe(`Invalid input: ${size} ${message}.`);
  });

  test('when the status filter is not a status, then "must be one of"', async () => {
    expect(await refusal(type, { status: 'SOLD' })).toBe('Invalid input: status must be one of: available, pending, sold.');
  });

  test.each(['offset', 'page', 'sort', 'limit2'])('when the unknown parameter %p is sent, then it is refused', async (key) => {
    expect(await refusal(type, { [key]: '1' })).toBe(`Invalid input: property ${key} should not exist.`);
  });
});

describe('PetIdArgs (getPet)', () => {
  test.each(['1', '42', '9007199254740991'])('when id is %p, then it is accepted as the same string', async (id) => {
    expect(await validateInput(PetIdArgs, { id })).toEqual({ id });
  });

  test.each(['0', '01', '-1', '+1', '1.0', '1e3', ' 1', 'abc', '', '9007199254740992', '18446744073709551615', 5, true, ['1']])(
    'when id is %p, then "must be a positive integer no larger than 2^53-1"',
    async (id) => {
      expect(await refusal(PetIdArgs, { id })).toBe('Invalid input: id must be a positive integer no larger than 9007199254740991.');
    },
  );

  test.each([{}, { id: null }])('when id is missing (%p), then "id is required"', async (values) => {
    expect(await refusal(PetIdArgs, values)).toBe('Invalid input: id is required.');
  });
});

describe('PetEventsArgs (petEvents)', () => {
  const UNCHANGED = "Invalid input: after must be an event cursor from this feed (an event's id or cursor, or an after= of a Link), unchanged.";

  test('when after is an event cursor, absent or null, then it is accepted, with or without a status', async () => {
    expect((await validateInput(PetEventsArgs, { after: encodeEventCursor(3), status: PetStatus.sold })).after).toBe(encodeEventCursor(3));
    expect((await validateInput(PetEventsArgs, {})).after).toBeUndefined();
    expect((await validateInput(PetEventsArgs, { after: null, status: null })).after).toBeNull();
  });

  test('when after is a list cursor, then the refusal says so', async () => {
    expect(await refusal(PetEventsArgs, { after: encodePetCursor({ afterId: 3 }) })).toBe(
      'Invalid input: after is a list cursor (GET /v1/pets, pets), not an event cursor.',
    );
  });

  test.each([
    ['an edited event cursor', `${encodeEventCursor(3).slice(0, -1)}A`],
    ['a foreign text', 'abc'],
    ['an empty text', ''],
    ['a number', 3],
  ])('when after is %s, then it must be an event cursor, unchanged', async (_case, after) => {
    expect(await refusal(PetEventsArgs, { after })).toBe(UNCHANGED);
  });
});
