import { createHash, timingSafeEqual } from 'node:crypto';
import { parsePositiveInteger } from '../validation/positive-integer';
import { PetStatus } from './pet-status.enum';
import { PET_LIMITS } from '../limits';

/**
 * Where a walk through listPets stands: after the pet with id `afterId`, in the list filtered
 * by `status` (none: every pet).
 */
export interface PetCursor {
  /** Only pets with this status, or every pet when absent. */
  status?: PetStatus;
  /** The id of the last pet already returned; the next page starts after it. */
  afterId: number;
}

/** The cursor format's version: the first field of every cursor; a change of format changes it. */
const VERSION = '1';
/** Bytes of SHA-256 kept as the checksum: an edited cursor passes by chance once in 2^64. */
const CHECKSUM_BYTES = 8;
const STATUSES: ReadonlySet<string> = new Set(Object.values(PetStatus));

function checksum(payload: string): Buffer {
  return createHash('sha256').update(`pet-store cursor\0${payload}`).digest().subarray(0, CHECKSUM_BYTES);
}

/**
 * Writes a cursor (docs/pagination.md): opaque to clients, the same on both surfaces (REST
 * `after` and the `Link` header, GraphQL `after`, `cursor` and `endCursor`). It is base64url of
 * `1.<status>.<afterId>` and a checksum, so a cursor that was edited, cut or made up is
 * recognised and refused. It is not a secret or a capability: it names nothing a client could
 * not list anyway, so it is not signed with a key, and it never expires.
 *
 * @param cursor - the list's filter and the id of the last pet returned (a positive safe integer).
 * @returns the cursor, about 24 to 40 URL-safe characters (no padding).
 */
export function encodePetCursor({ status, afterId }: PetCursor): string {
  const payload = `${VERSION}.${status ?? ''}.${afterId}`;
  return Buffer.concat([Buffer.from(payload, 'latin1'), checksum(payload)]).toString('base64url');
}

/**
 * Reads a cursor written by {@link encodePetCursor}.
 *
 * @param text - the cursor as the client sent it.
 * @returns its filter and position, or undefined when it is not a cursor this service wrote
 *   (not base64url, wrong checksum, unknown version or status, bad id).
 */
export function decodePetCursor(text: string): PetCursor | undefined {
  if (text.length > PET_LIMITS.cursorMaxLength || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64url');
  // Only the canonical spelling: a second one for the same cursor (unused trailing bits) is an edit.
  if (bytes.length <= CHECKSUM_BYTES || bytes.toString('base64url') !== text) return undefined;
  const payload = bytes.subarray(0, -CHECKSUM_BYTES).toString('latin1');
  if (!timingSafeEqual(bytes.subarray(-CHECKSUM_BYTES), checksum(payload))) return undefined;
  const [version, status, id, ...rest] = payload.split('.');
  if (version !== VERSION || rest.length > 0 || (status !== '' && !STATUSES.has(status))) return undefined;
  const afterId = parsePositiveInteger(id ?? '');
  if (afterId === undefined) return undefined;
  return status === '' ? { afterId } : { status: status as PetStatus, afterId };
}
