import { buildApp } from '../../src/app';
import { MIGRATIONS } from '../../src/database/data-source';
import { openDatabase } from '../../src/database/open-database';
import { createLogger } from '../../src/observability/logger';
import { ServiceState } from '../../src/observability/service-state';
import { type TestApp, request, startTestApp, testConfig } from '../helpers/test-app';
import { createTestDatabase } from '../helpers/test-database';

/** The level of each kind of log line (docs/operations.md "Logs"), read from a logger at debug, so every line is there. */

type Line = Record<string, any>;

/** A debug logger into `lines`. */
function loggerInto(lines: Line[]) {
  return createLogger('debug', { write: (line) => void lines.push(JSON.parse(line)) });
}

const DEBUG = 20;
const INFO = 30;
const WARN = 40;

describe('request lines by outcome', () => {
  let t: TestApp;
  const state = new ServiceState();
  const lines: Line[] = [];
  const completed = () => lines.filter((line) => line.msg === 'request completed').map(({ level, route, status }) => ({ level, route, status }));

  beforeAll(async () => {
    t = await startTestApp({ observe: { state, logger: loggerInto(lines) } });
  });
  afterAll(() => t.close());
  beforeEach(() => {
    lines.length = 0;
    state.draining = false;
  });

  test('when /healthz and a healthy /readyz answer 200, then their lines are at debug', async () => {
    expect((await request(t, 'GET', '/healthz', { apiKey: null })).status).toBe(200);
    expect((await request(t, 'GET', '/readyz', { apiKey: null })).status).toBe(200);
    expect(completed()).toEqual([
      { level: DEBUG, route: '/healthz', status: 200 },
      { level: DEBUG, route: '/readyz', status: 200 },
    ]);
  });

  test('when /readyz answers 503 because the service is draining, then its line is at info, not error', async () => {
    state.draining = true;
    expect((await request(t, 'GET', '/readyz', { apiKey: null })).status).toBe(503);
    expect(completed()).toEqual([{ level: INFO, route: '/readyz', status: 503 }]);
  });

  test('when an API request is served or refused, then its line stays at info', async () => {
    await request(t, 'GET', '/v1/pets');
    await request(t, 'GET', '/v1/pets', { apiKey: null });
    expect(completed()).toEqual([
      { level: INFO, route: '/v1/pets', status: 200 },
      { level: INFO, route: '/v1/pets', status: 401 },
    ]);
  });
});

describe('a /readyz 503 that is not a drain', () => {
  test('when migrations are pending, then the 503 is logged at warn', async () => {
    const { database: config, drop } = await createTestDatabase();
    const database = await openDatabase(config, { migrate: false });
    const lines: Line[] = [];
    const app = await buildApp({ config: testConfig(), database, logger: loggerInto(lines) });
    try {
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      expect(response.statusCode).toBe(503);
      expect(response.json().message).toBe('Database migrations are pending.');
      expect(lines.filter((line) => line.msg === 'request completed').map(({ level, status }) => ({ level, status }))).toEqual([{ level: WARN, status: 503 }]);
    } finally {
      await app.close();
      await database.close();
      await drop();
    }
  });

  test('when the database cannot serve, then the 503 is logged at warn', async () => {
    const { database: config, drop } = await createTestDatabase();
    const database = await openDatabase(config);
    const lines: Line[] = [];
    const app = await buildApp({ config: testConfig(), database, logger: loggerInto(lines) });
    try {
      await database.writer.destroy(); // the primary's pool closed: its check fails
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      expect(response.statusCode).toBe(503);
      expect(response.json().message).toMatch(/^The database \(primary\) cannot serve: /);
      expect(lines.filter((line) => line.msg === 'request completed').map(({ level, status }) => ({ level, status }))).toEqual([{ level: WARN, status: 503 }]);
    } finally {
      // The check reconnects the primary in the background: let it finish, so that close() ends that pool too.
      await database.nodes[0].connecting;
      await app.close();
      await database.close();
      await drop();
    }
  });
});

describe('migrations at start-up', () => {
  test('when a fresh database is opened, then one info line per applied migration names it; opened again, none', async () => {
    const { database: config, drop } = await createTestDatabase();
    const lines: Line[] = [];
    try {
      // The embedded database in memory is a new one at each open: open it once and look at that.
      const first = await openDatabase(config, { log: loggerInto(lines) });
      await first.close();
      const applied = lines.filter((line) => line.msg === 'applied migration');
      expect(applied).toEqual(MIGRATIONS.map((migration) => expect.objectContaining({ level: INFO, component: 'database', migration: migration.name })));
      if (config.type === 'mysql') {
        lines.length = 0;
        const again = await openDatabase(config, { log: loggerInto(lines) });
        await again.close();
        expect(lines.filter((line) => line.msg === 'applied migration')).toEqual([]);
      }
    } finally {
      await drop();
    }
  });
});
