import { hash, timingSafeEqual } from 'node:crypto';
import { parsePositiveInteger } from './positive-integer';
import { PET_LIMITS } from '../limits';

/** An edited cursor passes by chance once in 2^64. */
const CHECKSUM_BYTES = 8;

function checksum(payload: string): Buffer {
  // One-shot: no Hash object per cursor.
  return hash('sha256', `pet-store cursor\0${payload}`, 'buffer').subarray(0, CHECKSUM_BYTES);
}

/**
 * The opaque cursor of every list (docs/pagination.md): base64url of `payload` (latin1) and an 8-byte checksum. Not
 * signed with a key: a cursor names nothing its holder could not list, so the checksum only has to catch edits.
 */
export function encodeCursor(payload: string): string {
  return Buffer.concat([Buffer.from(payload, 'latin1'), checksum(payload)]).toString('base64url');
}

/** The payload of a cursor {@link encodeCursor} wrote; undefined for anything else (edited, cut, made up, too long). */
export function decodeCursor(text: string): string | undefined {
  if (text.length > PET_LIMITS.cursorMaxLength || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  // A second spelling of the same bytes (unused trailing bits) is an edit.
  if (bytes.length <= CHECKSUM_BYTES || bytes.toString('base64url') !== text) return undefined;
  const payload = bytes.subarray(0, -CHECKSUM_BYTES).toString('latin1');
  return timingSafeEqual(bytes.subarray(-CHECKSUM_BYTES), checksum(payload)) ? payload : undefined;
}

/**
 * The cursor of an administration list (docs/admin.md "Paging"), keyset on ids: `<list>.<id>`, the id the next page
 * continues from, whichever way the list runs.
 * @param list - the list's name, e.g. `audit-events`, so a cursor of one list is refused by another.
 */
export function encodeIdCursor(list: string, id: number): string {
  return encodeCursor(`${list}.${id}`);
}

/** The id in a cursor of {@link encodeIdCursor} for `list`; undefined for anything else (another list's included). */
export function decodeIdCursor(list: string, text: string): number | undefined {
  const payload = decodeCursor(text);
  if (payload === undefined || !payload.startsWith(`${list}.`)) return undefined;
  return parsePositiveInteger(payload.slice(list.length + 1));
}
