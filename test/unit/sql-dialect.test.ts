import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { DataSource } from 'typeorm';
import { sqlDialectOf } from '../../src/database/sql-dialect';

const SRC = path.resolve(__dirname, '..', '..', 'src');

/** Unopened DataSources: building one connects to nothing. */
const mysql = sqlDialectOf(new DataSource({ type: 'mysql', url: 'mysql://nobody@127.0.0.1:1/none' }));
const sqlite = sqlDialectOf(new DataSource({ type: 'sqljs' }));

describe('the SQL dialects (src/database/sql-dialect.ts)', () => {
  test('when an interval is not a finite number, then later() throws a RangeError on both engines rather than write it into SQL', () => {
    for (const dialect of [mysql, sqlite]) {
      for (const seconds of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) expect(() => dialect.later(seconds)).toThrow(RangeError);
    }
  });

  test('when an interval is negative or fractional, then later() writes it signed, to the microsecond on MySQL and the millisecond on SQLite', () => {
    expect([mysql.later(-1.5), mysql.later(0.0000015)]).toEqual([
      'UTC_TIMESTAMP(3) + INTERVAL -1500000 MICROSECOND',
      'UTC_TIMESTAMP(3) + INTERVAL 2 MICROSECOND',
    ]);
    expect([sqlite.later(-1.5), sqlite.later(90.25)]).toEqual([
      "strftime('%Y-%m-%d %H:%M:%f', 'now', '-1.500 seconds')",
      "strftime('%Y-%m-%d %H:%M:%f', 'now', '+90.250 seconds')",
    ]);
  });

  test('when src/ is read, then only src/database/ tells the engines apart', () => {
    const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));
    const engineTest = /[=!]==\s*'(mysql|sqlite|sqljs)'|'(mysql|sqlite|sqljs)'\s*[=!]==|case\s+'(mysql|sqlite|sqljs)'/;
    const testing = files.filter((file) => engineTest.test(readFileSync(path.join(SRC, file), 'utf8'))).map((file) => file.split(path.sep).join('/'));
    expect(testing.filter((file) => !file.startsWith('database/'))).toEqual([]);
  });
});
