import { IsInt, IsOptional, IsString, Max, Min, ValidateBy } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { decodeIdCursor } from './opaque-cursor';
import { ADMIN_LIMITS, PET_LIMITS } from '../limits';

/** class-validator-jsonschema's decorator, typed as a property decorator. */
const schema =
  (keywords: Parameters<typeof JSONSchema>[0]): PropertyDecorator =>
  (target, property) =>
    JSONSchema(keywords)(target, property as string);

/** Applies decorators as a stack written in this order would be (TypeScript applies the bottom one first). */
function stacked(...decorators: PropertyDecorator[]): PropertyDecorator {
  return (target, property) => [...decorators].reverse().forEach((decorate) => decorate(target, property));
}

/** `limit` of an administration list (docs/admin.md "Paging"): ADMIN_LIMITS' bounds; the class gives the default. */
export const AdminPageSize = () =>
  stacked(
    IsInt(),
    Min(ADMIN_LIMITS.listMin),
    Max(ADMIN_LIMITS.listMax),
    schema({ description: `Items per page (${ADMIN_LIMITS.listMin} to ${ADMIN_LIMITS.listMax}).` }),
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
    schema({
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
