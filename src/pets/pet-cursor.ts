import { decodeCursor as payloadOf, encodeCursor as encode } from '../validation/opaque-cursor';
import { parsePositiveInteger } from '../validation/positive-integer';
import { PetStatus } from './pet-status.enum';

/** Where a walk through listPets stands: after pet `afterId`, in the list filtered by `status` (none: every pet). */
export interface PetCursor {
  status?: PetStatus;
  afterId: number;
}

const VERSION = '1';
const EVENT_VERSION = 'e1';
const STATUSES: ReadonlySet<string> = new Set(Object.values(PetStatus));

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
