import { IsDefined, IsEnum, IsInt, IsOptional, IsString, Matches, Max, Min, ValidateBy, type ValidationArguments } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { ArgsType, Field, ID, InputType, Int } from 'type-graphql';
import { PetStatus } from './pet-status.enum';
import { cursorKind, decodePetCursor } from './pet-cursor';
import { isUnsafeInteger } from '../validation/json-number';
import { SafeInt } from './safe-int.type';
import { IsIdentifier, MaxCodePoints, REQUIRED, stacked } from '../validation/property-rules';
import { PET_LIMITS } from '../limits';

const STATUS_MESSAGE = { message: `$property must be one of: ${Object.values(PetStatus).join(', ')}` };

/** A cursor this service wrote (docs/pagination.md), for the same `status` as the input it is in. */
function IsPetCursor(): PropertyDecorator {
  // GraphQL may send null for an absent filter.
  const statusOf = (args: ValidationArguments) => (args.object as { status?: PetStatus | null }).status ?? undefined;
  const rule = ValidateBy({
    name: 'isPetCursor',
    validator: {
      validate: (value: unknown, args) => {
        const cursor = typeof value === 'string' ? decodePetCursor(value) : undefined;
        return cursor !== undefined && cursor.status === statusOf(args!);
      },
      defaultMessage: (args) => {
        const cursor = typeof args?.value === 'string' ? decodePetCursor(args.value) : undefined;
        if (typeof args?.value === 'string' && cursorKind(args.value) === 'event')
          return '$property is an event cursor (GET /v1/events, petEvents), not a list cursor';
        if (!args || !cursor) return '$property must be a cursor from a previous page of this list, unchanged';
        const filter = (status?: PetStatus) => (status ? `status ${status}` : 'no status filter');
        return `$property belongs to the list with ${filter(cursor.status)}, not ${filter(statusOf(args))}: keep the filter while paging`;
      },
    },
  });
  const schema = JSONSchema({
    type: 'string',
    pattern: '^[A-Za-z0-9_-]+$',
    maxLength: PET_LIMITS.cursorMaxLength,
    description:
      'Opaque cursor: the page after the one whose `Link` header (rel="next") holds it. Keep the same `status`; 400 when edited or from another filter.',
  });
  return (target, property) => {
    rule(target, property);
    schema(target, property as string);
  };
}

const AFTER_DESCRIPTION =
  'Opaque cursor: the list continues after the pet it names. Take it from the previous page (REST: the `Link` header with rel="next"; GraphQL: `endCursor` or an edge\'s `cursor`) and keep the same status filter.';

/** Body of createPet (spec "NewPet"). */
@InputType({ description: 'A new animal to add.' })
export class NewPetInput {
  @Field({ description: `The animal's name: 1 to ${PET_LIMITS.nameMaxLength} characters (Unicode code points), not blank, no control characters.` })
  @IsDefined(REQUIRED)
  @IsString()
  // One pattern, so OpenAPI states the same rule: a visible character (not white space, Cf or
  // default-ignorable), no control character, no unpaired surrogate (databases store them differently).
  @Matches(/^[^\p{Cc}\p{Cs}]*[^\p{White_Space}\p{Cc}\p{Cf}\p{Cs}\p{Default_Ignorable_Code_Point}][^\p{Cc}\p{Cs}]*$/u, {
    message: '$property must have a visible character and no control characters or unpaired surrogates',
  })
  @MaxCodePoints(PET_LIMITS.nameMaxLength)
  name!: string;

  @Field(() => SafeInt, { description: 'Identifier of the category (a positive integer).' })
  @IsDefined(REQUIRED)
  @IsInt({
    message: ({ value }) => (isUnsafeInteger(value) ? `$property must be an integer from 1 to ${PET_LIMITS.maxInt64}` : '$property must be an integer number'),
  })
  @Min(1)
  @Max(PET_LIMITS.maxInt64)
  @JSONSchema({ format: 'int64' })
  categoryId!: number;

  @Field(() => PetStatus, { description: 'Availability; `available` when omitted.' })
  @IsEnum(PetStatus, STATUS_MESSAGE)
  status: PetStatus = PetStatus.available;
}

/** The page size of listPets, `limit` or `first` (spec "Limits"). */
export const PageSize = () =>
  stacked(
    Field(() => Int, { nullable: true, description: `Maximum number of animals returned (${PET_LIMITS.listMin} to ${PET_LIMITS.listMax}).` }),
    IsInt(),
    Min(PET_LIMITS.listMin),
    Max(PET_LIMITS.listMax),
  );

export const StatusFilter = () =>
  stacked(
    Field(() => PetStatus, { nullable: true, description: 'Only animals with this status.' }),
    IsOptional(),
    IsEnum(PetStatus, STATUS_MESSAGE),
  );

/** listPets' cursor; typed string because OpenAPI reads the design type. */
export const AfterCursor = () =>
  stacked(
    Field(() => String, { nullable: true, description: AFTER_DESCRIPTION }),
    IsOptional(),
    IsPetCursor(),
  );

/** Arguments of listPets (spec "listPets"). */
@ArgsType()
export class ListPetsArgs {
  @PageSize()
  limit: number = PET_LIMITS.listDefault;

  @StatusFilter()
  status?: PetStatus | null;

  @AfterCursor()
  after?: string;
}

/** Arguments of getPet (spec "getPet"). */
@ArgsType()
export class PetIdArgs {
  @Field(() => ID, { description: 'Identifier of the animal.' })
  @IsDefined(REQUIRED)
  @IsIdentifier()
  id!: string;
}
