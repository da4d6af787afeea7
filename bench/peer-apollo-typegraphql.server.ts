import 'reflect-metadata';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { GraphQLError } from 'graphql';
import { Arg, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver, buildSchema, registerEnumType } from 'type-graphql';
import { Column, DataSource, Entity, PrimaryGeneratedColumn } from 'typeorm';
import { ACTIVE_KEY_SQL, bearerKeyCheck, exitOnSigterm, fail } from './standalone-server';

/**
 * GraphQL peer "apollo-typegraphql": Apollo Server 5 standalone (`startStandaloneServer`, as
 * Apollo's getting-started writes it) + type-graphql + TypeORM, tutorial style: one class is the
 * `@Entity` and the `@ObjectType`, a resolver calls a TypeORM repository, graphql-js executes
 * (no jit, no plugins). The key check of B1c (standalone-server.ts), its SELECT through the
 * DataSource, in the context function: a GraphQLError with `http.status` 401, as Apollo's
 * authentication docs write it.
 *
 * Skips what the service does beyond that: rate limits, input validation beyond GraphQL's
 * types, cost and depth limits, request logs and metrics, idempotency keys, security headers.
 * Its create is TypeORM's `save`, in the transaction `save` opens by default, as a tutorial's is.
 *
 * Environment: PORT; DATABASE_URL (mysql://…); POOL_SIZE (default 10); KEY_CACHE_MS and
 * KEY_CACHE_MAX as B1c (the bench passes the service's `API_KEY_CACHE`).
 */
enum PetStatus {
  available = 'available',
  pending = 'pending',
  sold = 'sold',
}
registerEnumType(PetStatus, { name: 'PetStatus' });

@ObjectType()
@Entity('pet')
class Pet {
  @Field(() => ID)
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  @Field()
  @Column()
  name!: string;

  @Field(() => Int)
  @Column({ name: 'category_id', type: 'bigint' })
  categoryId!: number;

  @Field(() => PetStatus)
  @Column({ type: 'varchar' })
  status!: PetStatus;
}

@InputType()
class NewPetInput {
  @Field()
  name!: string;

  @Field(() => Int)
  categoryId!: number;

  @Field(() => PetStatus, { defaultValue: PetStatus.available })
  status!: PetStatus;
}

const dataSource = new DataSource({ type: 'mysql', url: process.env.DATABASE_URL, entities: [Pet], poolSize: Number(process.env.POOL_SIZE ?? 10) });

@Resolver(() => Pet)
class PetResolver {
  private readonly repository = dataSource.getRepository(Pet);

  @Query(() => [Pet])
  pets(@Arg('limit', () => Int, { defaultValue: 20 }) limit: number, @Arg('status', () => PetStatus, { nullable: true }) status?: PetStatus): Promise<Pet[]> {
    return this.repository.find({ where: status ? { status } : {}, order: { id: 'ASC' }, take: limit });
  }

  @Query(() => Pet, { nullable: true })
  pet(@Arg('id', () => ID) id: string): Promise<Pet | null> {
    return this.repository.findOneBy({ id });
  }

  @Mutation(() => Pet)
  createPet(@Arg('input') input: NewPetInput): Promise<Pet> {
    return this.repository.save(this.repository.create(input));
  }
}

const isAuthorized = bearerKeyCheck(async (hash) => (await dataSource.query<unknown[]>(ACTIVE_KEY_SQL, [hash])).length > 0);

async function main(): Promise<void> {
  await dataSource.initialize();
  const server = new ApolloServer({ schema: await buildSchema({ resolvers: [PetResolver] }) });
  await startStandaloneServer(server, {
    listen: { port: Number(process.env.PORT), host: '127.0.0.1' },
    context: async ({ req }) => {
      if (!(await isAuthorized(req.headers.authorization))) {
        throw new GraphQLError('Unauthenticated', { extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } } });
      }
      return {};
    },
  });
  exitOnSigterm(() => server.stop().then(() => dataSource.destroy()));
}

main().catch(fail);
