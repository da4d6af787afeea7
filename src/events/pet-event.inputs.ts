import { IsOptional, ValidateBy } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { ArgsType, Field } from 'type-graphql';
import { cursorKind } from '../pets/pet-cursor';
import { StatusFilter } from '../pets/pet.inputs';
import type { PetStatus } from '../pets/pet-status.enum';
import { PET_LIMITS } from '../limits';

const EVENT_AFTER_DESCRIPTION =
  'Opaque event cursor: the feed continues after the event it names, on any instance. Take it from an event (`cursor`); any status filter may follow it.';

/** A cursor of an event of the change feed (docs/events.md), unchanged; a list cursor is named as such in the refusal. */
export function IsEventCursor(): PropertyDecorator {
  const rule = ValidateBy({
    name: 'isEventCursor',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && cursorKind(value) === 'event',
      defaultMessage: (args) =>
        typeof args?.value === 'string' && cursorKind(args.value) === 'list'
          ? '$property is a list cursor (petsConnection, GET /v1/pets), not an event cursor'
          : '$property must be the cursor of an event of the feed, unchanged',
    },
  });
  const schema = JSONSchema({ type: 'string', pattern: '^[A-Za-z0-9_-]+$', maxLength: PET_LIMITS.cursorMaxLength, description: EVENT_AFTER_DESCRIPTION });
  return (target, property) => {
    rule(target, property);
    schema(target, property as string);
  };
}

/** Arguments of the change feed's `petEvents`: where to resume, and which pets. */
@ArgsType()
export class PetEventsArgs {
  // Or null: from now.
  @Field(() => String, { nullable: true, description: `${EVENT_AFTER_DESCRIPTION} Without it, the feed starts now.` })
  @IsOptional()
  @IsEventCursor()
  after?: string | null;

  @StatusFilter()
  status?: PetStatus | null;
}
