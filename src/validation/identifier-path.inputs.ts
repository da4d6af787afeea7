import { IsDefined } from 'class-validator';
import { IsIdentifier, REQUIRED } from './property-rules';
import { validateInput } from './validate-input';

/** A path's `{id}` (`/v1/admin/api-keys/{id}`, `/v1/admin/webhook-endpoints/{id}`…): as the URL holds it, a decimal string. */
export class IdentifierPath {
  @IsDefined(REQUIRED)
  @IsIdentifier()
  id!: string;
}

/**
 * `id` (as sent, or a number a CLI parsed) as a number, by {@link IsIdentifier}'s rule.
 * @throws AppError BAD_USER_INPUT naming `id`.
 */
export async function identifierOf(id: unknown): Promise<number> {
  const path = await validateInput(IdentifierPath, { id: typeof id === 'number' ? String(id) : id });
  return Number(path.id);
}
