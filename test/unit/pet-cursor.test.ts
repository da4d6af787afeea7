import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { AppError } from '../../src/errors/error-catalogue';
import { PetsConnectionArgs } from '../../src/graphql/pet-connection.types';
import { PET_LIMITS } from '../../src/limits';
import { decodePetCursor, encodePetCursor, type PetCursor } from '../../src/pets/pet-cursor';
import { PetStatus } from '../../src/pets/pet-status.enum';
import { ListPetsArgs } from '../../src/pets/pet.inputs';
import { validateInput } from '../../src/validation/validate-input';

/**
 * The cursor of both surfaces (docs/pagination.md), in process: what encodePetCursor writes, what decodePetCursor
 * refuses, and the BAD_USER_INPUT the input rules (validateInput, as PetService and the connection resolver call it) raise.
 */

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const UNCHANGED = 'Invalid input: after must be a cursor from a previous page of this list, unchanged.';

/** The cursor's 8-byte checksum as docs/pagination.md describes it, to forge cursors whose payload only is wrong. */
const checksumOf = (payload: string) => createHash('sha256').update(`pet-store cursor\0${payload}`).digest().subarray(0, 8);
/** A cursor with a correct checksum around any payload. */
const forge = (payload: string) => Buffer.concat([Buffer.from(payload, 'latin1'), checksumOf(payload)]).toString('base64url');

const real = encodePetCursor({ status: PetStatus.available, afterId: 1234 });

/** The error validateInput raises for ListPetsArgs with these values, or undefined when it accepts them. */
async function refusalOf(values: Record<string, unknown>, type: new () => object = ListPetsArgs): Promise<AppError | undefined> {
  try {
    await validateInput(type, values);
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
}

describe('encodePetCursor and decodePetCursor', () => {
  const ROUND_TRIPS: PetCursor[] = [
    { afterId: 1 },
    { afterId: Number.MAX_SAFE_INTEGER },
    ...Object.values(PetStatus).flatMap((status) => [
      { status, afterId: 1 },
      { status, afterId: Number.MAX_SAFE_INTEGER },
    ]),
  ];

  test.each(ROUND_TRIPS)('when %p is encoded and decoded, then the same cursor comes back', (cursor) => {
    expect(decodePetCursor(encodePetCursor(cursor))).toEqual(cursor);
  });

  test('when a cursor has no status, then the decoded object has no status key at all', () => {
    expect(Object.keys(decodePetCursor(encodePetCursor({ afterId: 7 }))!)).toEqual(['afterId']);
  });

  test('when encoded, then it is base64url of "1.<status>.<afterId>" and the first 8 bytes of its sha256 checksum', () => {
    const bytes = Buffer.from(encodePetCursor({ status: PetStatus.sold, afterId: 42 }), 'base64url');
    expect(bytes.subarray(0, -8).toString('latin1')).toBe('1.sold.42');
    expect(bytes.subarray(-8)).toEqual(checksumOf('1.sold.42'));
    expect(
      Buffer.from(encodePetCursor({ afterId: 42 }), 'base64url')
        .subarray(0, -8)
        .toString('latin1'),
    ).toBe('1..42');
  });

  test('when encoded twice, then it is the same text (no nonce, no time), so both surfaces hand out the same cursor', () => {
    expect(encodePetCursor({ status: PetStatus.pending, afterId: 99 })).toBe(encodePetCursor({ status: PetStatus.pending, afterId: 99 }));
  });

  test('when the ids or statuses differ, then the cursors differ', () => {
    const all = ROUND_TRIPS.map(encodePetCursor);
    expect(new Set(all).size).toBe(all.length);
  });

  test('when encoded, then only URL-safe characters, no padding, from 16 to 48 characters: within cursorMaxLength', () => {
    const shortest = encodePetCursor({ afterId: 1 });
    const longest = encodePetCursor({ status: PetStatus.available, afterId: Number.MAX_SAFE_INTEGER });
    expect(shortest).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(longest).toMatch(/^[A-Za-z0-9_-]+$/);
    expect([shortest.length, longest.length]).toEqual([16, 48]);
    expect(longest.length).toBeLessThanOrEqual(PET_LIMITS.cursorMaxLength);
  });
});

describe('a cursor the service did not write', () => {
  test('when any one character is replaced by any other base64url character, then it is refused', () => {
    let tried = 0;
    for (let at = 0; at < real.length; at++) {
      for (const character of BASE64URL) {
        if (character === real[at]) continue;
        tried += 1;
        expect({ at, character, decoded: decodePetCursor(real.slice(0, at) + character + real.slice(at + 1)) }).toEqual({
          at,
          character,
          decoded: undefined,
        });
      }
    }
    expect(tried).toBe(real.length * 63);
  });

  test('when any one bit of its bytes is flipped, then it is refused', () => {
    const bytes = Buffer.from(real, 'base64url');
    for (let at = 0; at < bytes.length; at++) {
      for (let bit = 0; bit < 8; bit++) {
        const edited = Buffer.from(bytes);
        edited[at] ^= 1 << bit;
        expect({ at, bit, decoded: decodePetCursor(edited.toString('base64url')) }).toEqual({ at, bit, decoded: undefined });
      }
    }
  });

  test('when it is cut short by any number of characters, then it is refused', () => {
    for (let length = 0; length < real.length; length++) {
      expect({ length, decoded: decodePetCursor(real.slice(0, length)) }).toEqual({ length, decoded: undefined });
    }
  });

  test('when characters are added at its end, then it is refused', () => {
    for (const extra of ['A', 'AA', 'AAAA', real]) expect(decodePetCursor(real + extra)).toBeUndefined();
  });

  test('when its last character is spelt with other unused trailing bits (same bytes), then it is refused as an edit', () => {
    const cursor = encodePetCursor({ afterId: 1 }); // 12 bytes: 16 characters, no unused bits
    const withSpareBits = encodePetCursor({ afterId: 10 }); // 13 bytes: 18 characters, the last holds 4 unused bits
    expect(cursor).toHaveLength(16);
    expect(withSpareBits).toHaveLength(18);
    const last = BASE64URL.indexOf(withSpareBits.at(-1)!);
    const sameBytes = withSpareBits.slice(0, -1) + BASE64URL[last ^ 1];
    expect(Buffer.from(sameBytes, 'base64url')).toEqual(Buffer.from(withSpareBits, 'base64url'));
    expect(decodePetCursor(withSpareBits)).toEqual({ afterId: 10 });
    expect(decodePetCursor(sameBytes)).toBeUndefined();
  });

  test('when its payload is rewritten but the old checksum is kept, then it is refused', () => {
    const bytes = Buffer.from(real, 'base64url');
    const payload = bytes.subarray(0, -8).toString('latin1').replace(/\d+$/, '1');
    expect(payload).toBe('1.available.1');
    expect(decodePetCursor(Buffer.concat([Buffer.from(payload, 'latin1'), bytes.subarray(-8)]).toString('base64url'))).toBeUndefined();
  });

  test.each([
    ['another version', '2.available.5'],
    ['no version', '.available.5'],
    ['an unknown status', '1.lost.5'],
    ['a status in upper case', '1.AVAILABLE.5'],
    ['an id of 0', '1..0'],
    ['a negative id', '1..-5'],
    ['an id with a leading zero', '1..05'],
    ['an id with a sign', '1..+5'],
    ['an id with a fraction', '1..5.5'],
    ['an id in exponent form', '1..5e3'],
    ['an id of 2^53', '1..9007199254740992'],
    ['no id', '1.available.'],
    ['an extra part', '1.sold.5.6'],
    ['too few parts', '1.5'],
    ['an empty payload', ''],
  ])('when it has a correct checksum around %s (%p), then it is refused: the payload rules hold on their own', (_case, payload) => {
    expect(decodePetCursor(forge(payload))).toBeUndefined();
  });

  test('when forged with a correct checksum around a well-formed payload, then it is accepted: the checksum catches edits, not forgery', () => {
    expect(decodePetCursor(forge('1.pending.77'))).toEqual({ status: PetStatus.pending, afterId: 77 });
  });

  test.each([
    ['empty', ''],
    ['made up', 'abc'],
    ['an id in plain text', '12'],
    ['with base64 padding', `${real}=`],
    ['standard base64 (+ and /)', 'a+b/c'],
    ['with a space', `${real.slice(0, 5)} ${real.slice(6)}`],
    ['with non-ASCII letters', 'ÄÖÜäöü'],
    ['percent-encoded', encodeURIComponent(`${real}=`)],
    ['a graphql-relay cursor', Buffer.from('arrayconnection:5').toString('base64')],
    ['a JSON cursor of another API', Buffer.from('{"id":5}').toString('base64url')],
    ['an offset', Buffer.from('offset:20').toString('base64url')],
    ['too long (cursorMaxLength + 1)', 'A'.repeat(PET_LIMITS.cursorMaxLength + 1)],
    ['a real cursor twice', real + real],
  ])('when it is %s, then decodePetCursor returns undefined', (_case, text) => {
    expect(decodePetCursor(text)).toBeUndefined();
  });
});

describe('the input rules on `after` (the error both surfaces raise)', () => {
  const tampered = real.slice(0, 3) + (real[3] === 'A' ? 'B' : 'A') + real.slice(4);

  test.each([
    ['one character changed', tampered],
    ['cut short', real.slice(0, -4)],
    ['made up', 'abc'],
    ['not base64url', 'a+b/c'],
    ['too long', 'A'.repeat(101)],
    ['empty', ''],
  ])('when `after` is %s, then AppError BAD_USER_INPUT (400) saying the cursor must be unchanged', async (_case, after) => {
    const error = await refusalOf({ status: PetStatus.available, after });
    expect(error?.toBody()).toEqual({ code: 'BAD_USER_INPUT', status: 400, message: UNCHANGED });
  });

  test.each([
    ['a number', 5],
    ['an array (REST repeats the parameter)', [real, real]],
    ['an object', { afterId: 1 }],
    ['a boolean', true],
  ])('when `after` is %s, then the same BAD_USER_INPUT', async (_case, after) => {
    expect((await refusalOf({ status: PetStatus.available, after }))?.toBody()).toEqual({ code: 'BAD_USER_INPUT', status: 400, message: UNCHANGED });
  });

  test.each([
    [PetStatus.sold, PetStatus.available, 'status sold', 'status available'],
    [undefined, PetStatus.available, 'no status filter', 'status available'],
    [PetStatus.pending, undefined, 'status pending', 'no status filter'],
    [PetStatus.pending, null, 'status pending', 'no status filter'],
  ])('when a cursor of the list with status %p is used with status %p, then BAD_USER_INPUT telling to keep the filter', async (from, to, was, is) => {
    const after = encodePetCursor({ status: from, afterId: 3 });
    for (const type of [ListPetsArgs, PetsConnectionArgs]) {
      const error = await refusalOf({ after, ...(to !== undefined && { status: to }) }, type);
      expect(error?.toBody()).toEqual({
        code: 'BAD_USER_INPUT',
        status: 400,
        message: `Invalid input: after belongs to the list with ${was}, not ${is}: keep the filter while paging.`,
      });
    }
  });

  test('when the cursor matches the filter, then it is accepted on both argument types; null and absent `after` mean none', async () => {
    const after = encodePetCursor({ status: PetStatus.sold, afterId: 3 });
    await expect(validateInput(ListPetsArgs, { status: PetStatus.sold, after })).resolves.toEqual({ limit: PET_LIMITS.listDefault, status: 'sold', after });
    await expect(validateInput(PetsConnectionArgs, { status: PetStatus.sold, after })).resolves.toEqual({
      first: PET_LIMITS.listDefault,
      status: 'sold',
      after,
    });
    await expect(validateInput(ListPetsArgs, { after: null, status: null })).resolves.toEqual({ limit: PET_LIMITS.listDefault, after: null, status: null });
    await expect(validateInput(ListPetsArgs, { after: encodePetCursor({ afterId: 1 }), status: null })).resolves.toMatchObject({ status: null });
  });
});
