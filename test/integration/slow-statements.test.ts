import { Writable } from 'node:stream';
import pino from 'pino';
import type { Database } from '../../src/database/database';
import { startDatabaseBudget, withinDeadline } from '../../src/database/database-deadline';
import { openDatabase } from '../../src/database/open-database';
import { createTestDatabase, describeOnMysql } from '../helpers/test-database';

/** The slow-statement log (docs/operations.md "Logs", DATABASE_SLOW_STATEMENT_MS) on a real MySQL/MariaDB. */
describeOnMysql('the slow-statement log', () => {
  const lines: Record<string, unknown>[] = [];
  let database: Database;
  let drop: () => Promise<void>;
  const slowLines = () => lines.filter((line) => line.msg === 'slow database query');

  beforeAll(async () => {
    const created = await createTestDatabase();
    drop = created.drop;
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString('utf8')) as Record<string, unknown>);
        done();
      },
    });
    database = await openDatabase(created.database, { log: pino({ level: 'warn' }, stream), slowStatementMs: 40 });
  });

  afterAll(async () => {
    await database?.close();
    await drop?.();
  });

  beforeEach(() => lines.splice(0));

  test("when a request's statement takes longer than the threshold, then it is logged at warn with the request id, without values", async () => {
    await withinDeadline(database, (manager) => manager.query('SELECT SLEEP(?) AS slept', [0.06]), { budget: startDatabaseBudget('request-slow-1') });
    expect(slowLines()).toEqual([
      expect.objectContaining({
        level: 40,
        component: 'database',
        requestId: 'request-slow-1',
        query: 'SELECT SLEEP(?) AS slept',
        durationMs: expect.any(Number),
      }),
    ]);
    expect(slowLines()[0].durationMs).toBeGreaterThanOrEqual(40);
  });

  test('when a statement outside any request is slow, then its line says so with a null request id', async () => {
    await withinDeadline(database, (manager) => manager.query('SELECT SLEEP(0.06)'));
    expect(slowLines()).toEqual([expect.objectContaining({ requestId: null })]);
  });

  test('when a statement stays under the threshold, then nothing is logged', async () => {
    await withinDeadline(database, (manager) => manager.query('SELECT 1'), { budget: startDatabaseBudget('request-fast-1') });
    expect(slowLines()).toEqual([]);
  });
});
