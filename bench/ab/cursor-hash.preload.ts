import * as cursor from '../../src/pets/pet-cursor';
import { PetStatus } from '../../src/pets/pet-status.enum';
import { parsePositiveInteger } from '../../src/validation/positive-integer';
import { PET_LIMITS } from '../../src/limits';
import { announce, replaceFunction } from './replace-export';

const STATUSES: ReadonlySet<string> = new Set(Object.values(PetStatus));

/**
 * Without the cursor's hash: base64url of the same payload `1.<status>.<afterId>` with no SHA-256
 * checksum; decoding checks the rest as the service does, so cursors still round-trip.
 */
replaceFunction(
  cursor,
  'encodePetCursor',
  'src/pets/pet-cursor',
  () =>
    ({ status, afterId }) =>
      Buffer.from(`1.${status ?? ''}.${afterId}`, 'latin1').toString('base64url'),
);
replaceFunction(cursor, 'decodePetCursor', 'src/pets/pet-cursor', () => (text) => {
  if (text.length > PET_LIMITS.cursorMaxLength || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined;
  const [version, status, id, ...rest] = Buffer.from(text, 'base64url').toString('latin1').split('.');
  if (version !== '1' || rest.length > 0 || (status !== '' && !STATUSES.has(status))) return undefined;
  const afterId = parsePositiveInteger(id ?? '');
  if (afterId === undefined) return undefined;
  return status === '' ? { afterId } : { status: status as PetStatus, afterId };
});
announce('cursor hash off: encodePetCursor()/decodePetCursor() without the SHA-256 checksum');
