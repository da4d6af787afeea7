import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import type { Database } from '../../src/database/database';
import { withinDeadline } from '../../src/database/database-deadline';
import { toSafeInteger } from '../../src/database/int64';
import { PET_FEED_NAME, PetFeedRecord } from '../../src/events/pet-feed.entity';
import { TEST_DATABASE_URL, openTestDatabase, testOnMysql } from '../helpers/test-database';

/** A DATETIME as a raw query returns it: a Date from mysql2 (UTC, the DataSource's time zone), UTC text from sql.js. */
const asDate = (value: Date | string): Date => (value instanceof Date ? value : new Date(`${value.replace(' ', 'T')}Z`));

describe("the database's SQL dialect (Database.dialect), on the engine of this run", () => {
  let database: Database;
  let dataSource: DataSource;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ database, dataSource, close } = await openTestDatabase());
  });
  afterAll(() => close());

  test('when the database is opened, then it is embedded exactly on the embedded run', () => {
    expect(database.embedded).toBe(TEST_DATABASE_URL === undefined);
  });

  test("when the database's clock is read, then it is UTC, within a second of Node's", async () => {
    const [{ now }]: { now: Date | string }[] = await dataSource.query(`SELECT ${database.dialect.now} AS now`);
    expect(Math.abs(asDate(now).getTime() - Date.now())).toBeLessThan(1000);
  });

  testOnMysql("when the session's time zone is not UTC, then the database's clock is still UTC", async () => {
    const runner = dataSource.createQueryRunner('master');
    try {
      await runner.query("SET SESSION time_zone = '+05:00'");
      const [{ now, local }]: { now: Date; local: Date }[] = await runner.query(`SELECT ${database.dialect.now} AS now, NOW(3) AS local`);
      expect(Math.abs(now.getTime() - Date.now())).toBeLessThan(1000);
      expect(Math.round((local.getTime() - now.getTime()) / 3_600_000)).toBe(5);
    } finally {
      await runner.query('SET SESSION time_zone = DEFAULT');
      await runner.release();
    }
  });

  test('when intervals are added to the clock, then the times are that much later or earlier, to the millisecond', async () => {
    const { now, later } = database.dialect;
    const [row]: Record<'now' | 'later' | 'earlier', Date | string>[] = await dataSource.query(
      `SELECT ${now} AS now, ${later(90.25)} AS later, ${later(-1.5)} AS earlier`,
    );
    const at = asDate(row.now).getTime();
    expect([asDate(row.later).getTime() - at, asDate(row.earlier).getTime() - at]).toEqual([90_250, -1_500]);
  });

  test('when a lease is stored with later() and compared with now in SQL, then it holds until it runs out on the clock, and reads back as that time', async () => {
    const { now, later } = database.dialect;
    const feeds = dataSource.getRepository(PetFeedRecord);
    await feeds.update({ name: PET_FEED_NAME }, { leaseExpiresAt: () => later(0.3) });
    const valid = async () => {
      const [row]: { valid: string | number }[] = await dataSource.query(`SELECT lease_expires_at > ${now} AS valid FROM pet_feed WHERE name = ?`, [
        PET_FEED_NAME,
      ]);
      return Number(row.valid);
    };
    expect(await valid()).toBe(1);
    const { leaseExpiresAt } = await feeds.findOneByOrFail({ name: PET_FEED_NAME });
    expect(Math.abs(leaseExpiresAt!.getTime() - (Date.now() + 300))).toBeLessThan(1000);
    await sleep(400);
    expect(await valid()).toBe(0);
    await feeds.update({ name: PET_FEED_NAME }, { leaseExpiresAt: null });
  });

  test('when a row is read with the row lock in a transaction, then the engine takes the statement', async () => {
    const { rowLock } = database.dialect;
    const head = await withinDeadline(
      database,
      async (manager) => {
        const query = manager.createQueryBuilder(PetFeedRecord, 'feed').where('feed.name = :name', { name: PET_FEED_NAME });
        if (rowLock) query.setLock(rowLock.mode);
        return (await query.getOneOrFail()).head;
      },
      { transaction: true },
    );
    expect(head).toBe(0);
    expect(rowLock === undefined).toBe(database.embedded);
  });

  testOnMysql('when one transaction holds the row lock, then a locked read of the row in another waits for it', async () => {
    const { rowLock } = database.dialect;
    const [holder, waiter] = [dataSource.createQueryRunner('master'), dataSource.createQueryRunner('master')];
    const lockedRead = (runner: typeof holder) =>
      runner.manager.createQueryBuilder(PetFeedRecord, 'feed').setLock(rowLock!.mode).where('feed.name = :name', { name: PET_FEED_NAME }).getOneOrFail();
    try {
      await holder.startTransaction();
      await lockedRead(holder);
      await waiter.query('SET SESSION innodb_lock_wait_timeout = 1');
      await waiter.startTransaction();
      await expect(lockedRead(waiter)).rejects.toMatchObject({ code: 'ER_LOCK_WAIT_TIMEOUT' });
    } finally {
      if (waiter.isTransactionActive) await waiter.rollbackTransaction();
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await Promise.all([waiter.release(), holder.release()]);
    }
  });

  test('when a raw INSERT runs, then its result carries the new id exactly where the dialect says it does', async () => {
    const result: { insertId?: number | string } = await dataSource.query("INSERT INTO pet (name, category_id, status) VALUES ('raw', 1, 'available')");
    const [{ id }]: { id: string | number }[] = await dataSource.query("SELECT MAX(id) AS id FROM pet WHERE name = 'raw'");
    expect(result.insertId === undefined ? undefined : toSafeInteger(result.insertId)).toBe(database.dialect.rawInsertId ? toSafeInteger(id) : undefined);
  });
});
