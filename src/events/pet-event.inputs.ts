import { IsInt, IsOptional, Max, Min, ValidateBy } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { ArgsType, Field, Int } from 'type-graphql';
import { cursorKind, decodeEventCursor } from '../pets/pet-cursor';
import { StatusFilter } from '../pets/pet.inputs';
import type { PetStatus } from '../pets/pet-status.enum';
import { PET_FEED_LIMITS, PET_LIMITS } from '../limits';

/**
 * An event cursor this service wrote (docs/events.md "Cursors"); a list cursor, an edited or a foreign one fails with a
 * message that says which. `name` replaces the property's name in the message (a header's name, e.g. `Last-Event-ID`).
 */
function IsEventCursor(name = '$property'): PropertyDecorator {
  const rule = ValidateBy({
    name: 'isEventCursor',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && decodeEventCursor(value) !== undefined,
      defaultMessage: (args) =>
        typeof args?.value === 'string' && cursorKind(args.value) === 'list'
          ? `${name} is a list cursor (GET /v1/pets, pets), not an event cursor`
          : `${name} must be an event cursor from this feed (an event's id or cursor, or an after= of a Link), unchanged`,
    },
  });
  const schema = JSONSchema({
    type: 'string',
    pattern: '^[A-Za-z0-9_-]+$',
    maxLength: PET_LIMITS.cursorMaxLength,
    description:
      'Opaque event cursor: the feed continues after the event it names (an event\'s `id`, or the `after` of a `Link` rel="next"). ' +
      'Absent: from the beginning (JSON), from now (SSE). 400 when edited or a list cursor.',
  });
  return (target, property) => {
    rule(target, property);
    schema(target, property as string);
  };
}

/** Arguments of the change feed (docs/events.md): a page of `GET /v1/events`, or where a stream starts. */
@ArgsType()
export class ListEventsArgs {
  @Field(() => Int, {
    nullable: true,
    description: `Maximum number of events returned (1 to ${PET_FEED_LIMITS.maxPageSize}); a stream ignores it.`,
  })
  @IsInt()
  @Min(1)
  @Max(PET_FEED_LIMITS.maxPageSize)
  limit: number = PET_FEED_LIMITS.defaultPageSize;

  @StatusFilter()
  status?: PetStatus | null;

  @Field(() => String, { nullable: true, description: 'Opaque event cursor: the feed continues after the event it names.' })
  @IsOptional()
  @IsEventCursor()
  after?: string;
}

/** The `Last-Event-ID` an EventSource sends when it reconnects (WHATWG HTML "Server-sent events"). */
export class LastEventIdInput {
  @IsOptional()
  @IsEventCursor('Last-Event-ID')
  lastEventId?: string;
}

/** Arguments of the `petEvents` subscription: where to resume, and which pets; the same cursor rule as the REST feed's. */
@ArgsType()
export class PetEventsArgs {
  // Or null: from now.
  @Field(() => String, {
    nullable: true,
    description:
      'Opaque event cursor: the feed continues after the event it names, on any instance. Take it from an event (`cursor`); ' +
      'any status filter may follow it. Without it, the feed starts now.',
  })
  @IsOptional()
  @IsEventCursor()
  after?: string | null;

  @StatusFilter()
  status?: PetStatus | null;
}
