import type { DataSource, EntityManager } from 'typeorm';
import type { Database } from '../../src/database/database';
import { withinDeadline } from '../../src/database/database-deadline';
import { toAppError } from '../../src/errors/error-catalogue';
import { PetStatus } from '../../src/pets/pet-status.enum';
import { Pet } from '../../src/pets/pet.entity';
import { describeOnMysql, openTestDatabase } from '../helpers/test-database';
import { DATABASE_DEADLINES } from '../../src/limits';

/**
 * What the server answers for a transaction that lost a conflict, or on a Galera node that is
 * not ready, with the server's own errors (SIGNAL raises them exactly as the server would):
 * conflicts are run again within the deadline, everything else of the kind is 503 with
 * Retry-After, never 500. MySQL only: sql.js runs in-process and never conflicts.
 */
describeOnMysql('database conflicts and a node that is not ready', () => {
  let database: Database;
  let dataSource: DataSource;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ database, dataSource, close } = await openTestDatabase());
  });
  afterAll(() => close());

  /** Raises MySQL error `errno` from the server, as the statement the server refused. */
  const signal = (manager: EntityManager, errno: number, message: string) =>
    manager.query(`SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = ${errno}, MESSAGE_TEXT = '${message}'`);

  const countNamed = (name: string) => dataSource.getRepository(Pet).countBy({ name });

  test('when a transaction loses a deadlock (1213) once, then it is run again, commits once, and its first run left nothing', async () => {
    let runs = 0;
    const result = await withinDeadline(
      database,
      async (manager) => {
        runs++;
        await manager.getRepository(Pet).insert({ name: 'Deadlocked', categoryId: 1, status: PetStatus.available });
        if (runs === 1) await signal(manager, 1213, 'Deadlock found when trying to get lock; try restarting transaction');
        return runs;
      },
      { transaction: true },
    );
    expect(result).toBe(2);
    expect(await countNamed('Deadlocked')).toBe(1);
  });

  test('when a create without a transaction (one autocommit INSERT) loses a deadlock (1213) once, then it is run again and stores once', async () => {
    let runs = 0;
    await withinDeadline(
      database,
      async (manager) => {
        runs++;
        // The first run's one statement is refused as a lost conflict is: it committed nothing.
        if (runs === 1) return signal(manager, 1213, 'Deadlock found when trying to get lock; try restarting transaction');
        return manager.getRepository(Pet).insert({ name: 'AutocommitDeadlocked', categoryId: 1, status: PetStatus.available });
      },
      { autocommitWrite: true },
    );
    expect(runs).toBe(2);
    expect(await countNamed('AutocommitDeadlocked')).toBe(1);
  });

  test('when two transactions deadlock for real, then the one the server chose as victim is run again and both commit', async () => {
    const pets = dataSource.getRepository(Pet);
    const [a, b] = await Promise.all(
      ['LockA', 'LockB'].map(async (name) => (await pets.insert({ name, categoryId: 1, status: PetStatus.available })).identifiers[0].id as number),
    );
    let runs = 0;
    const crossing = (first: number, second: number) =>
      withinDeadline(
        database,
        async (manager) => {
          runs++;
          await manager.query('UPDATE pet SET category_id = category_id + 1 WHERE id = ?', [first]);
          await manager.query('SELECT SLEEP(0.2)');
          await manager.query('UPDATE pet SET category_id = category_id + 1 WHERE id = ?', [second]);
        },
        { transaction: true },
      );
    await Promise.all([crossing(a, b), crossing(b, a)]);
    expect(runs).toBe(3);
    expect((await pets.findBy([{ id: a }, { id: b }])).map((pet) => pet.categoryId)).toEqual([3, 3]);
  });

  test.each([
    { what: 'a transaction', options: { transaction: true }, name: 'TimedOut' },
    { what: 'a create without a transaction (one autocommit INSERT)', options: { autocommitWrite: true }, name: 'AutocommitTimedOut' },
  ])(
    `when $what keeps hitting lock wait timeouts (1205), then it runs ${DATABASE_DEADLINES.conflictAttempts} times and is answered 503 with Retry-After, nothing stored`,
    async ({ options, name }) => {
      let runs = 0;
      const failure = await withinDeadline(
        database,
        async (manager) => {
          runs++;
          // The server refuses the INSERT itself, or, in a transaction, a statement after it.
          if (options.transaction) await manager.getRepository(Pet).insert({ name, categoryId: 1, status: PetStatus.available });
          await signal(manager, 1205, 'Lock wait timeout exceeded; try restarting transaction');
        },
        options,
      ).catch((error: unknown) => error);
      expect(runs).toBe(DATABASE_DEADLINES.conflictAttempts);
      const { appError } = toAppError(failure);
      expect([appError.status, appError.code, appError.headers['Retry-After']]).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
      expect(await countNamed(name)).toBe(0);
    },
  );

  test.each([
    [1047, 'WSREP has not yet prepared node for application use'],
    [1180, 'Got error 6 "No such device or address" during COMMIT'],
    [1290, 'The MariaDB server is running with the --read-only option so it cannot execute this statement'],
  ])('when the server refuses with %i (%s), then it is not run again and is answered 503 with Retry-After, nothing stored', async (errno, message) => {
    let runs = 0;
    const failure = await withinDeadline(
      database,
      async (manager) => {
        runs++;
        await manager.getRepository(Pet).insert({ name: `Refused${errno}`, categoryId: 1, status: PetStatus.available });
        await signal(manager, errno, message);
      },
      { transaction: true },
    ).catch((error: unknown) => error);
    expect(runs).toBe(1);
    const { appError } = toAppError(failure);
    expect([appError.status, appError.code, appError.headers['Retry-After']]).toEqual([503, 'SERVICE_UNAVAILABLE', '1']);
    expect(await countNamed(`Refused${errno}`)).toBe(0);
  });
});
