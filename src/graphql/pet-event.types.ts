import { Field, ObjectType } from 'type-graphql';
import { Pet } from '../pets/pet.entity';

/** An entry of the change feed as `petEvents` sends it (docs/events.md). */
@ObjectType('PetEvent', { description: 'One entry of the change feed: a pet whose create has committed, at its place in the feed.' })
export class PetEventObject {
  @Field({ description: 'Pass as `after` to resume the feed right after this event, on any instance, with any status filter.' })
  cursor!: string;

  @Field({ description: 'What happened: `pet.created`.' })
  type!: string;

  @Field(() => Pet, { description: 'The pet as it was created.' })
  pet!: Pet;
}
