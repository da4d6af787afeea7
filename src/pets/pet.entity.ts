import { Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, Index, Generated, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';
import { Node } from './node.interface';
import { PetStatus } from './pet-status.enum';
import { SafeInt } from './safe-int.type';
import { PET_LIMITS } from '../limits';

/** An animal (spec "Pet"): table `pet`, the GraphQL `Pet` type (a Relay Node, by its id as is), and the REST body as is. */
// simpleResolvers: no per-field wrapper, as Pet has no field resolvers or middlewares.
@ObjectType({ description: 'An animal of the store.', simpleResolvers: true, implements: Node })
@Entity({ name: 'pet' })
@Index('idx_pet_status_id', ['status', 'id'])
@Index('uq_pet_seq', ['seq'], { unique: true })
@Index('idx_pet_status_seq', ['status', 'seq'])
export class Pet implements Node {
  @Field(() => ID, { description: 'Unique identifier assigned on creation (an int64, sent as a string).' })
  @PrimaryColumn({ type: 'bigint', transformer: int64Transformer })
  @Generated('increment')
  id!: number;

  @Field({ description: `The animal's name: 1 to ${PET_LIMITS.nameMaxLength} characters (Unicode code points), not blank.` })
  @Column({ type: 'varchar', length: PET_LIMITS.nameMaxLength })
  name!: string;

  @Field(() => SafeInt, { description: 'Identifier of the category the animal belongs to.' })
  @Column({ name: 'category_id', type: 'bigint', transformer: int64Transformer })
  categoryId!: number;

  @Field(() => PetStatus, { description: 'Availability of the animal.' })
  @Column({ type: 'varchar', length: 16 })
  status!: PetStatus;

  /** The pet's position in the change feed (docs/events.md), stamped after its COMMIT by the sequencer; null until then. Not in the API. */
  @Column({ type: 'bigint', nullable: true, transformer: int64Transformer })
  seq?: number | null;
}
