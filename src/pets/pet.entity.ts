import { Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, Index, Generated, PrimaryColumn } from 'typeorm';
import { int64Transformer } from '../database/int64';
import { PetStatus } from './pet-status.enum';
import { SafeInt } from './safe-int.type';
import { PET_LIMITS } from '../limits';

/**
 * An animal of the store (spec "Pet"): the TypeORM entity of table `pet` and the GraphQL
 * `Pet` type. Over REST it is sent as is: `{ id, name, categoryId, status }`, all four
 * always present (status is never null: it defaults to `available`).
 */
// simpleResolvers: plain property reads, without type-graphql's per-field resolver wrapper (no
// field resolvers or middlewares on Pet).
@ObjectType({ description: 'An animal of the store.', simpleResolvers: true })
@Entity({ name: 'pet' })
@Index('idx_pet_status_id', ['status', 'id'])
export class Pet {
  /** Assigned by the database on creation; int64 kept within ±(2^53-1). */
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
}
