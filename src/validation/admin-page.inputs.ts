import { IsInt, IsOptional, IsString, Max, Min, ValidateBy } from 'class-validator';
import { decodeIdCursor, encodeIdCursor } from './opaque-cursor';
import { jsonSchema, stacked } from './property-rules';
import { ADMIN_LIMITS, PET_LIMITS } from '../limits';

/** `limit` of an administration list (docs/admin.md "Paging"): ADMIN_LIMITS' bounds; the class gives the default. */
export const AdminPageSize = () =>
  stacked(
    IsInt(),
    Min(ADMIN_LIMITS.listMin),
    Max(ADMIN_LIMITS.listMax),
    jsonSchema({ description: `Items per page (${ADMIN_LIMITS.listMin} to ${ADMIN_LIMITS.listMax}).` }),
  );

/** `after` of the administration list `list`: a cursor of that list (opaque-cursor.ts encodeIdCursor), as a previous page's `Link` gave it. */
export const AdminPageCursor = (list: string) =>
  stacked(
    IsOptional(),
    IsString(),
    ValidateBy({
      name: 'isAdminCursor',
      validator: {
        validate: (value: unknown) => typeof value === 'string' && decodeIdCursor(list, value) !== undefined,
        defaultMessage: () => `$property must be a cursor from a previous page of ${list}, unchanged`,
      },
    }),
    jsonSchema({
      type: 'string',
      pattern: '^[A-Za-z0-9_-]+$',
      maxLength: PET_LIMITS.cursorMaxLength,
      description: 'Opaque cursor: the page after the one whose `Link` header (rel="next") holds it. 400 when edited or from another list.',
    }),
  );

/** A page of an administration list, and the cursor of the next one when more follow. */
export interface AdminPage<T> {
  items: T[];
  limit: number;
  /** Absent on the last page. */
  nextCursor?: string;
}

/**
 * The page of administration list `list` from `rows`, read with one row more than `limit` (keyset paging: the extra row
 * says a next page exists): the first `limit`, and the cursor after the last of them when more follow.
 */
export function adminPage<T extends { id: number }>(list: string, rows: readonly T[], limit: number): AdminPage<T> {
  const items = rows.slice(0, limit);
  return { items, limit, ...(rows.length > limit && { nextCursor: encodeIdCursor(list, items[limit - 1].id) }) };
}
