import { hash, timingSafeEqual } from 'node:crypto';
import { parsePositiveInteger } from '../validation/positive-integer';
import { PetStatus } from './pet-status.enum';
import { PET_LIMITS } from '../limits';

/** Where a walk through listPets stands: after pet `afterId`, in the list filtered by `status` (none: every pet). */
export interface PetCursor {
  status?: PetStatus;
  afterId: number;
}

const VERSION = '1';
const EVENT_VERSION = 'e1';
/** An edited cursor passes by chance once in 2^64. */
const CHECKSUM_BYTES = 8;
const STATUSES: ReadonlySet<string> = new Set(Object.values(PetStatus));

function checksum(payload: string): Buffer {
  // One-shot: no Hash object per cursor.
  return hash('sha256', `pet-store cursor\0${payload}`, 'buffer').subarray(0, CHECKSUM_BYTES);
}

/** Reads a checksummed cursor's payload; undefined for anything this service did not write. */
function payloadOf(text: string): string | undefined {
  if (text.length > PET_LIMITS.cursorMaxLength || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  // A second spelling of the same bytes (unused trailing bits) is an edit.
  if (bytes.length <= CHECKSUM_BYTES || bytes.toString('base64url') !== text) return undefined;
  const payload = bytes.subarray(0, -CHECKSUM_BYTES).toString('latin1');
  return timingSafeEqual(bytes.subarray(-CHECKSUM_BYTES), checksum(payload)) ? payload : undefined;
}

/** base64url of `payload` and its checksum. */
function encode(payload: string): string {
  return Buffer.concat([Buffer.from(payload, 'latin1'), checksum(payload)]).toString('base64url');
}

/**
 * The list cursor of both surfaces (docs/pagination.md): base64url of `1.<status>.<afterId>` and a checksum, 16 to 48 characters.
 * Not signed with a key: it names nothing a client could not list, so the checksum only has to catch edits.
 */
export function encodePetCursor({ status, afterId }: PetCursor): string {
  return encode(`${VERSION}.${status ?? ''}.${afterId}`);
}

/** Reads a cursor of {@link encodePetCursor}; undefined for anything else (an event cursor included). */
export function decodePetCursor(text: string): PetCursor | undefined {
  const payload = payloadOf(text);
  if (payload === undefined) return undefined;
  const [version, status, id, ...rest] = payload.split('.');
  if (version !== VERSION || rest.length > 0 || (status !== '' && !STATUSES.has(status))) return undefined;
  const afterId = parsePositiveInteger(id ?? '');
  if (afterId === undefined) return undefined;
  return status === '' ? { afterId } : { status: status as PetStatus, afterId };
}

/** The change feed's cursor (docs/events.md): base64url of `e1.<seq>` and a checksum; a position, whatever the filter. */
export function encodeEventCursor(seq: number): string {
  return encode(`${EVENT_VERSION}.${seq}`);
}

/** Reads a cursor of {@link encodeEventCursor} as its position; undefined for anything else (a list cursor included). */
export function decodeEventCursor(text: string): number | undefined {
  const [version, seq, ...rest] = payloadOf(text)?.split('.') ?? [];
  if (version !== EVENT_VERSION || rest.length > 0) return undefined;
  return parsePositiveInteger(seq ?? '');
}

/** Which of this service's cursors `text` is, for an error that says so; undefined when it is neither (edited, foreign). */
export function cursorKind(text: string): 'list' | 'event' | undefined {
  if (decodePetCursor(text) !== undefined) return 'list';
  return decodeEventCursor(text) !== undefined ? 'event' : undefined;
}
