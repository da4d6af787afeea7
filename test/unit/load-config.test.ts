import path from 'node:path';
import { CONFIG_SPEC, ConfigError, DEV_API_KEY_PATH, EMBEDDED_DATABASE_PATH, METRICS_PORT_OFFSET, loadConfig } from '../../src/config';
import { LOG_LEVELS } from '../../src/observability/log-levels';
import { API_KEY_CACHE, DATABASE_DEADLINES } from '../../src/limits';

/**
 * loadConfig with explicit environments: the rules test/unit/config.test.ts leaves out (each variable's boundaries, the
 * exact messages, deep freezing, what is ignored), so a bad value is a ConfigError naming its variable before start-up.
 */

/** The ConfigError loadConfig throws for `env`; fails the test when it accepts it. */
function configError(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).name).toBe('ConfigError');
    return (error as ConfigError).message;
  }
  throw new Error(`accepted: ${JSON.stringify(env)}`);
}

const MYSQL = 'mysql://user:pass@db:3306/petstore';

describe('the variables read', () => {
  test('when listed, then the 32 variables of CONFIG_SPEC, frozen', () => {
    expect(Object.keys(CONFIG_SPEC)).toEqual([
      'PORT',
      'HOST',
      'DATABASE_URL',
      'EMBEDDED_DATABASE',
      'NODE_ENV',
      'LOG_LEVEL',
      'PUBLIC_BASE_URL',
      'STAGING_BASE_URL',
      'CORS_ORIGINS',
      'TRUST_PROXY',
      'RATE_LIMIT_MAX',
      'RATE_LIMIT_UNAUTHENTICATED_MAX',
      'RATE_LIMIT_WINDOW_SECONDS',
      'REDIS_URL',
      'REDIS_NAMESPACE',
      'PET_EVENTS_CHANNEL',
      'RATE_LIMIT_ON_REDIS_FAILURE',
      'RATE_LIMIT_NAMESPACE',
      'DATABASE_REPLICA_URLS',
      'DATABASE_REPLICA_MAX_LAG_SECONDS',
      'DATABASE_CONNECT_ATTEMPTS',
      'DATABASE_MIGRATE_ON_START',
      'DATABASE_SLOW_STATEMENT_MS',
      'API_KEY_CACHE_SECONDS',
      'TRUSTED_DOCUMENTS',
      'METRICS_PORT',
      'METRICS_HOST',
      'SHUTDOWN_DRAIN_SECONDS',
      'SHUTDOWN_GRACE_SECONDS',
      'WEBHOOK_ALLOW_HTTP',
      'WEBHOOK_ALLOW_PRIVATE_TARGETS',
      'WEBHOOK_RETRY_SCHEDULE',
      'WEBHOOK_DELIVERIES',
    ]);
    expect(Object.isFrozen(CONFIG_SPEC)).toBe(true);
  });

  test('when variables outside the spec are set, then they are ignored', () => {
    expect(loadConfig({ FOO: 'bar', port: '1', DATABASE: 'x', PORTS_OPEN: '1' })).toEqual(loadConfig({}));
  });

  test('when process.env holds other values, then only the env given is read', () => {
    const saved = process.env.PORT;
    process.env.PORT = '4321';
    try {
      expect(loadConfig({}).port).toBe(3000);
    } finally {
      if (saved === undefined) delete process.env.PORT;
      else process.env.PORT = saved;
    }
  });

  test('when defaults come from the limits, then the replica lag and the key cache follow them', () => {
    expect(loadConfig({}).apiKeyCacheSeconds).toBe(API_KEY_CACHE.ttlMs / 1000);
    expect(loadConfig({ DATABASE_URL: MYSQL, DATABASE_REPLICA_URLS: MYSQL }).database).toMatchObject({
      replicaMaxLagSeconds: DATABASE_DEADLINES.replicaMaxLagSeconds,
    });
  });

  test('when read, then the paths are relative to the working directory', () => {
    expect(EMBEDDED_DATABASE_PATH).toBe(path.join('data', 'petstore.sqlite'));
    expect(DEV_API_KEY_PATH).toBe(path.join('data', 'dev-api-key'));
    expect(loadConfig({}).database).toEqual({ type: 'sqlite', path: path.resolve('data', 'petstore.sqlite') });
  });
});

describe('the result', () => {
  test('when read, then it and every object and list in it are frozen', () => {
    const config = loadConfig({ DATABASE_URL: MYSQL, DATABASE_REPLICA_URLS: MYSQL, CORS_ORIGINS: 'https://a.example.com', TRUST_PROXY: '10.0.0.0/8' });
    const frozen = {
      config: Object.isFrozen(config),
      database: Object.isFrozen(config.database),
      replicaUrls: Object.isFrozen((config.database as { replicaUrls?: readonly string[] }).replicaUrls),
      corsOrigins: Object.isFrozen(config.corsOrigins),
      trustProxy: Object.isFrozen(config.trustProxy),
      rateLimit: Object.isFrozen(config.rateLimit),
      metrics: Object.isFrozen(config.metrics),
      shutdown: Object.isFrozen(config.shutdown),
    };
    expect(frozen).toEqual({
      config: true,
      database: true,
      replicaUrls: true,
      corsOrigins: true,
      trustProxy: true,
      rateLimit: true,
      metrics: true,
      shutdown: true,
    });
    expect(() => {
      (config as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  test('when read twice from the same env, then equal results that share nothing mutable', () => {
    const env = { CORS_ORIGINS: 'https://a.example.com' };
    const first = loadConfig(env);
    const second = loadConfig(env);
    expect(first).toEqual(second);
    expect(first.corsOrigins).not.toBe(second.corsOrigins);
  });

  test('when the base addresses are unset, then the keys are absent, not undefined', () => {
    const config = loadConfig({});
    expect(Object.keys(config)).not.toContain('publicBaseUrl');
    expect(Object.keys(config)).not.toContain('stagingBaseUrl');
    expect(Object.keys(config.rateLimit)).not.toContain('redisUrl');
  });
});

describe('PORT, HOST, METRICS_PORT, METRICS_HOST', () => {
  test.each([
    ['1', 1],
    ['80', 80],
    ['59071', 59071],
  ])('when PORT is %p, then port %i and metrics on PORT + 6464', (value, port) => {
    expect(loadConfig({ PORT: value })).toMatchObject({ port, metrics: { port: port + METRICS_PORT_OFFSET } });
  });

  test('when PORT is 59071, then metrics take 65535; 59072 would pass it and is refused until METRICS_PORT is set', () => {
    expect(loadConfig({ PORT: '59071' }).metrics.port).toBe(65535);
    expect(configError({ PORT: '59072' })).toBe('Invalid configuration: METRICS_PORT: unset, it would be PORT + 6464 = 65536, past 65535: set it');
    expect(loadConfig({ PORT: '65535', METRICS_PORT: '9464' })).toMatchObject({ port: 65535, metrics: { port: 9464 } });
  });

  test.each(['', '0', '080', '65536', '-1', '3000.0', ' 3000', '1e3', 'http'])('when PORT is %p, then ConfigError "PORT: Invalid port input"', (value) => {
    expect(configError({ PORT: value })).toBe(`Invalid configuration: PORT: Invalid port input: "${value}"`);
  });

  test('when METRICS_PORT equals PORT, then ConfigError, whether PORT is set or the default', () => {
    expect(configError({ METRICS_PORT: '3000' })).toBe('Invalid configuration: METRICS_PORT: must differ from PORT');
    expect(configError({ PORT: '8080', METRICS_PORT: '8080' })).toBe('Invalid configuration: METRICS_PORT: must differ from PORT');
  });

  test.each(['localhost', '0.0.0.0', '::', '::1', 'api.internal', '10.1.2.3'])('when HOST is %p, then it is used, and by metrics too', (host) => {
    expect(loadConfig({ HOST: host })).toMatchObject({ host, metrics: { host } });
  });

  test.each([
    ['HOST', ''],
    ['HOST', 'not a host!'],
    ['HOST', 'under_score.example'],
    ['METRICS_HOST', 'bad host'],
  ])('when %s is %p, then ConfigError "Invalid host (domain or ip)"', (key, value) => {
    expect(configError({ [key]: value })).toBe(`Invalid configuration: ${key}: Invalid host (domain or ip): "${value}"`);
  });
});

describe('NODE_ENV and LOG_LEVEL', () => {
  test.each(['development', 'test', 'production'])('when NODE_ENV is %p, then it is kept', (nodeEnv) => {
    expect(loadConfig({ NODE_ENV: nodeEnv, DATABASE_URL: MYSQL }).nodeEnv).toBe(nodeEnv);
  });

  test.each(['', 'Production', 'prod', 'staging'])('when NODE_ENV is %p, then ConfigError listing the choices', (value) => {
    expect(configError({ NODE_ENV: value })).toBe(`Invalid configuration: NODE_ENV: Value "${value}" not in choices [development,test,production]`);
  });

  test.each([...LOG_LEVELS])('when LOG_LEVEL is %p, then it is kept', (level) => {
    expect(loadConfig({ LOG_LEVEL: level }).logLevel).toBe(level);
  });

  test.each(['INFO', 'verbose', ''])('when LOG_LEVEL is %p, then ConfigError listing the levels', (value) => {
    expect(configError({ LOG_LEVEL: value })).toBe(
      `Invalid configuration: LOG_LEVEL: Value "${value}" not in choices [fatal,error,warn,info,debug,trace,silent]`,
    );
  });
});

describe('the database variables', () => {
  test('when DATABASE_URL is set alone, then MySQL without replicas (no replica keys at all)', () => {
    expect(loadConfig({ DATABASE_URL: MYSQL }).database).toEqual({ type: 'mysql', url: MYSQL });
  });

  test('when replicas are listed with blanks and spaces, then each URL trimmed, blanks dropped; all blank means none', () => {
    expect(loadConfig({ DATABASE_URL: MYSQL, DATABASE_REPLICA_URLS: ' mysql://r1/db , ,mysql://r2/db,' }).database).toEqual({
      type: 'mysql',
      url: MYSQL,
      replicaUrls: ['mysql://r1/db', 'mysql://r2/db'],
      replicaMaxLagSeconds: 5,
    });
    expect(loadConfig({ DATABASE_URL: MYSQL, DATABASE_REPLICA_URLS: ' , ' }).database).toEqual({ type: 'mysql', url: MYSQL });
    expect(loadConfig({ DATABASE_REPLICA_URLS: ' , ' }).database.type).toBe('sqlite');
  });

  test.each([
    ['0', 0],
    ['30', 30],
  ])('when DATABASE_REPLICA_MAX_LAG_SECONDS is %p, then %i', (value, seconds) => {
    expect(loadConfig({ DATABASE_URL: MYSQL, DATABASE_REPLICA_URLS: MYSQL, DATABASE_REPLICA_MAX_LAG_SECONDS: value }).database).toMatchObject({
      replicaMaxLagSeconds: seconds,
    });
  });

  test.each([
    ['DATABASE_URL', 'db:3306/petstore', 'must be a URL such as mysql://user:pass@host:3306/db'],
    ['DATABASE_URL', 'mariadb://db:3306/petstore', 'must be a URL such as mysql://user:pass@host:3306/db'],
    ['DATABASE_URL', 'mysql://db', 'must name a database, as in mysql://user:pass@host:3306/db'],
    ['DATABASE_URL', 'mysql://db:3306/', 'must name a database, as in mysql://user:pass@host:3306/db'],
    ['DATABASE_REPLICA_URLS', 'mysql://r1/db,http://r2/db', 'must be a URL such as mysql://user:pass@host:3306/db'],
    ['DATABASE_REPLICA_MAX_LAG_SECONDS', '-1', 'must be 0 or a positive integer'],
    ['DATABASE_REPLICA_MAX_LAG_SECONDS', '00', 'must be 0 or a positive integer'],
    ['DATABASE_REPLICA_MAX_LAG_SECONDS', '1.5', 'must be 0 or a positive integer'],
    ['DATABASE_CONNECT_ATTEMPTS', '0', 'must be a positive integer'],
    ['DATABASE_CONNECT_ATTEMPTS', 'three', 'must be a positive integer'],
    ['DATABASE_MIGRATE_ON_START', 'maybe', 'Invalid bool input: "maybe"'],
    ['DATABASE_MIGRATE_ON_START', 'TRUE', 'Invalid bool input: "TRUE"'],
  ])('when %s is %p, then ConfigError "%s"', (key, value, message) => {
    expect(configError({ DATABASE_URL: MYSQL, [key]: value })).toBe(`Invalid configuration: ${key}: ${message}`);
  });

  test.each([
    ['true', true],
    ['t', true],
    ['yes', true],
    ['on', true],
    ['1', true],
    ['false', false],
    ['f', false],
    ['no', false],
    ['off', false],
    ['0', false],
  ])('when DATABASE_MIGRATE_ON_START is %p, then %p', (value, migrate) => {
    expect(loadConfig({ DATABASE_MIGRATE_ON_START: value }).migrateOnStart).toBe(migrate);
  });
});

describe('the integer variables', () => {
  const POSITIVE = ['RATE_LIMIT_MAX', 'RATE_LIMIT_UNAUTHENTICATED_MAX', 'RATE_LIMIT_WINDOW_SECONDS', 'DATABASE_CONNECT_ATTEMPTS', 'SHUTDOWN_GRACE_SECONDS'];
  const NON_NEGATIVE = ['API_KEY_CACHE_SECONDS', 'SHUTDOWN_DRAIN_SECONDS', 'DATABASE_REPLICA_MAX_LAG_SECONDS'];
  const readBack = (key: string, config: ReturnType<typeof loadConfig>): unknown =>
    ({
      RATE_LIMIT_MAX: config.rateLimit.max,
      RATE_LIMIT_UNAUTHENTICATED_MAX: config.rateLimit.unauthenticatedMax,
      RATE_LIMIT_WINDOW_SECONDS: config.rateLimit.windowSeconds,
      DATABASE_CONNECT_ATTEMPTS: config.databaseConnectAttempts,
      SHUTDOWN_GRACE_SECONDS: config.shutdown.graceSeconds,
      SHUTDOWN_DRAIN_SECONDS: config.shutdown.drainSeconds,
      API_KEY_CACHE_SECONDS: config.apiKeyCacheSeconds,
      DATABASE_REPLICA_MAX_LAG_SECONDS: (config.database as { replicaMaxLagSeconds?: number }).replicaMaxLagSeconds,
    })[key];
  const withReplica = { DATABASE_URL: MYSQL, DATABASE_REPLICA_URLS: MYSQL };

  test.each(POSITIVE.flatMap((key) => ['1', '9007199254740991'].map((value) => [key, value])))('when %s is %p, then that number', (key, value) => {
    expect(readBack(key, loadConfig({ ...withReplica, [key]: value }))).toBe(Number(value));
  });

  test.each(POSITIVE.flatMap((key) => ['0', '01', '-1', '+1', '1e3', '1.0', ' 5', '9007199254740992', ''].map((value) => [key, value])))(
    'when %s is %p, then ConfigError "must be a positive integer"',
    (key, value) => {
      expect(configError({ ...withReplica, [key]: value })).toBe(`Invalid configuration: ${key}: must be a positive integer`);
    },
  );

  test.each(NON_NEGATIVE.flatMap((key) => ['0', '1', '3600'].map((value) => [key, value])))('when %s is %p, then that number', (key, value) => {
    expect(readBack(key, loadConfig({ ...withReplica, [key]: value }))).toBe(Number(value));
  });

  test.each(NON_NEGATIVE.flatMap((key) => ['00', '-0', '-1', '0.5', 'never', ''].map((value) => [key, value])))(
    'when %s is %p, then ConfigError "must be 0 or a positive integer"',
    (key, value) => {
      expect(configError({ ...withReplica, [key]: value })).toBe(`Invalid configuration: ${key}: must be 0 or a positive integer`);
    },
  );
});

describe('REDIS_URL, REDIS_NAMESPACE', () => {
  test.each(['redis://cache:6379', 'rediss://user:secret@cache.example.com:6380/2', 'redis://[::1]:6379'])(
    'when REDIS_URL is %p, then the rate limit uses it as given',
    (url) => {
      expect(loadConfig({ REDIS_URL: url }).redis.url).toBe(url);
    },
  );

  test.each(['cache:6379', 'redis', 'http://cache:6379', 'unix:///tmp/redis.sock', ''])('when REDIS_URL is %p, then ConfigError with an example', (value) => {
    expect(configError({ REDIS_URL: value })).toBe('Invalid configuration: REDIS_URL: must be a URL such as redis://host:6379');
  });

  test('when the namespace is set, then every name in Redis starts with it', () => {
    const config = loadConfig({ REDIS_NAMESPACE: 'eu:' });
    expect({ counters: config.rateLimit.counterPrefix, ...config.redis }).toEqual({
      counters: 'eu:rate-limit:',
      onFailure: 'serve-local',
      keyChangesChannel: 'eu:api-key-changes',
      petFeedChannel: 'eu:pet-feed',
    });
  });
});

describe('RATE_LIMIT_ON_REDIS_FAILURE', () => {
  test('when unset, then rate limits are counted by each instance while Redis is away (serve-local)', () => {
    expect(loadConfig({}).redis.onFailure).toBe('serve-local');
  });

  test.each(['serve-local', 'refuse'])('when it is %p, then it is kept', (value) => {
    expect(loadConfig({ RATE_LIMIT_ON_REDIS_FAILURE: value }).redis.onFailure).toBe(value);
  });

  test.each(['', 'Refuse', 'allow', 'fail-open'])('when it is %p, then ConfigError listing the choices', (value) => {
    expect(configError({ RATE_LIMIT_ON_REDIS_FAILURE: value })).toBe(
      `Invalid configuration: RATE_LIMIT_ON_REDIS_FAILURE: Value "${value}" not in choices [serve-local,refuse]`,
    );
  });
});

describe('TRUST_PROXY', () => {
  test.each([
    ['1', 1],
    ['3', 3],
    ['10.0.0.0/8', ['10.0.0.0/8']],
    ['10.0.0.0/0', ['10.0.0.0/0']],
    ['192.168.1.7/32', ['192.168.1.7/32']],
    ['::1', ['::1']],
    ['fd00::/128', ['fd00::/128']],
    [' 10.0.0.1 ,, fd00::/8 ', ['10.0.0.1', 'fd00::/8']],
    [',', false],
    ['', false],
  ])('when TRUST_PROXY is %p, then %p', (value, trustProxy) => {
    expect(loadConfig({ TRUST_PROXY: value }).trustProxy).toEqual(trustProxy);
  });

  test.each(['0', '01', '-1', 'nginx', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/8/1', '10.0.0.0/', '10.0.0.0/x', '10.0.0.256', 'localhost'])(
    'when TRUST_PROXY holds %p, then ConfigError naming the entry',
    (value) => {
      expect(configError({ TRUST_PROXY: value })).toBe(
        `Invalid configuration: TRUST_PROXY: ${value} is not a hop count, an IP address or a CIDR range such as 10.0.0.0/8`,
      );
    },
  );

  test('when a list holds one bad entry among good ones, then the bad one is named', () => {
    expect(configError({ TRUST_PROXY: '10.0.0.0/8, proxy.internal' })).toBe(
      'Invalid configuration: TRUST_PROXY: proxy.internal is not a hop count, an IP address or a CIDR range such as 10.0.0.0/8',
    );
  });
});

describe('CORS_ORIGINS, PUBLIC_BASE_URL, STAGING_BASE_URL', () => {
  test.each([
    ['https://app.example.com', ['https://app.example.com']],
    ['http://localhost:5173', ['http://localhost:5173']],
    ['https://a.example.com,https://b.example.com:8443', ['https://a.example.com', 'https://b.example.com:8443']],
    [' , ', []],
  ])('when CORS_ORIGINS is %p, then %p', (value, origins) => {
    expect(loadConfig({ CORS_ORIGINS: value }).corsOrigins).toEqual(origins);
  });

  test.each([
    ['https://app.example.com/', 'is not an origin (scheme://host[:port], no path)'],
    ['https://app.example.com:443', 'is not an origin (scheme://host[:port], no path)'],
    ['HTTPS://APP.EXAMPLE.COM', 'is not an origin (scheme://host[:port], no path)'],
    ['https://app.example.com?x=1', 'is not an origin (scheme://host[:port], no path)'],
    ['app.example.com', 'is not an origin such as https://app.example.com'],
    ['*', 'is not an origin such as https://app.example.com'],
  ])('when CORS_ORIGINS holds %p, then ConfigError: it %s', (value, message) => {
    expect(configError({ CORS_ORIGINS: value })).toBe(`Invalid configuration: CORS_ORIGINS: ${value} ${message}`);
  });

  test.each([
    ['https://api.example.com/v1', 'https://api.example.com/v1'],
    ['https://api.example.com/v1/', 'https://api.example.com/v1'],
    ['http://localhost:8080/api/v1', 'http://localhost:8080/api/v1'],
  ])('when PUBLIC_BASE_URL is %p, then %p', (value, url) => {
    expect(loadConfig({ PUBLIC_BASE_URL: value, STAGING_BASE_URL: value })).toMatchObject({ publicBaseUrl: url, stagingBaseUrl: url });
  });

  test.each([
    ['https://api.example.com/v2', 'must be an http(s) URL whose path ends in /v1'],
    ['https://api.example.com/v1/pets', 'must be an http(s) URL whose path ends in /v1'],
    ['https://api.example.com/xv1', 'must be an http(s) URL whose path ends in /v1'],
    ['ftp://api.example.com/v1', 'must be a URL such as https://api.example.com/v1'],
    ['api.example.com/v1', 'must be a URL such as https://api.example.com/v1'],
  ])('when PUBLIC_BASE_URL or STAGING_BASE_URL is %p, then ConfigError "%s"', (value, message) => {
    expect(configError({ PUBLIC_BASE_URL: value })).toBe(`Invalid configuration: PUBLIC_BASE_URL: ${message}`);
    expect(configError({ STAGING_BASE_URL: value })).toBe(`Invalid configuration: STAGING_BASE_URL: ${message}`);
  });
});

describe('WEBHOOK_RETRY_SCHEDULE', () => {
  test('when it starts with 0, then the first attempt goes at once and the rest are the retries', () => {
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0, 5,300' }).webhooks.retrySchedule).toEqual([0, 5, 300]);
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '0' }).webhooks.retrySchedule).toEqual([0]);
  });

  test.each(['5,300', '0.5,5', '1'])(
    'when it is %p (a first entry other than 0, which no attempt would wait), then ConfigError saying it must start with 0',
    (value) => {
      expect(configError({ WEBHOOK_RETRY_SCHEDULE: value })).toBe(
        `Invalid configuration: WEBHOOK_RETRY_SCHEDULE: must start with 0 (the first attempt goes at once; the retries' delays follow), e.g. 0,${value}`,
      );
    },
  );
});

describe('several problems', () => {
  test('when several variables are bad, then one ConfigError lists each, joined by "; ", in spec order', () => {
    expect(configError({ RATE_LIMIT_MAX: '0', PORT: 'x', REDIS_URL: 'x' })).toBe(
      'Invalid configuration: PORT: Invalid port input: "x"; RATE_LIMIT_MAX: must be a positive integer; REDIS_URL: must be a URL such as redis://host:6379',
    );
  });

  test('when two rules between variables fail, then both are named in one ConfigError', () => {
    expect(configError({ METRICS_PORT: '3000', DATABASE_REPLICA_URLS: MYSQL })).toBe(
      'Invalid configuration: METRICS_PORT: must differ from PORT; DATABASE_REPLICA_URLS: needs DATABASE_URL (the primary)',
    );
  });

  test('when a variable is bad, then the rules between variables are not checked yet: only the variable is named', () => {
    expect(configError({ PORT: 'x', DATABASE_REPLICA_URLS: MYSQL })).toBe('Invalid configuration: PORT: Invalid port input: "x"');
  });
});

describe('production fails closed (docs/configuration.md "Production")', () => {
  const NO_DATABASE =
    'Invalid configuration: DATABASE_URL: NODE_ENV=production needs an explicit database: set DATABASE_URL, ' +
    `or EMBEDDED_DATABASE=true to run on the embedded file ${EMBEDDED_DATABASE_PATH}`;

  test('when NODE_ENV=production names no database, then one ConfigError line naming both ways out', () => {
    const message = configError({ NODE_ENV: 'production' });
    expect(message).toBe(NO_DATABASE);
    expect(message).not.toContain('\n');
  });

  test.each(['false', '0', 'no'])('when NODE_ENV=production and EMBEDDED_DATABASE is %p, then still refused', (value) => {
    expect(configError({ NODE_ENV: 'production', EMBEDDED_DATABASE: value })).toBe(NO_DATABASE);
  });

  test('when NODE_ENV=production opts in with EMBEDDED_DATABASE=true, then the embedded file', () => {
    expect(loadConfig({ NODE_ENV: 'production', EMBEDDED_DATABASE: 'true' }).database).toEqual({
      type: 'sqlite',
      path: path.resolve(EMBEDDED_DATABASE_PATH),
    });
  });

  test('when NODE_ENV=production names DATABASE_URL, then MySQL', () => {
    expect(loadConfig({ NODE_ENV: 'production', DATABASE_URL: MYSQL }).database).toEqual({ type: 'mysql', url: MYSQL });
  });

  test.each(['development', 'test', undefined])('when NODE_ENV is %p and nothing names a database, then the embedded file', (nodeEnv) => {
    expect(loadConfig(nodeEnv === undefined ? {} : { NODE_ENV: nodeEnv }).database.type).toBe('sqlite');
  });

  test('when both DATABASE_URL and EMBEDDED_DATABASE=true are set, then ConfigError: one or the other', () => {
    expect(configError({ DATABASE_URL: MYSQL, EMBEDDED_DATABASE: 'true' })).toBe('Invalid configuration: EMBEDDED_DATABASE: set it or DATABASE_URL, not both');
  });

  test('when EMBEDDED_DATABASE is not a boolean, then ConfigError naming it', () => {
    expect(configError({ EMBEDDED_DATABASE: 'sure' })).toBe('Invalid configuration: EMBEDDED_DATABASE: Invalid bool input: "sure"');
  });
});

describe('misspelt variables (docs/configuration.md "Production")', () => {
  test.each([
    ['DATABSE_URL', 'DATABASE_URL'],
    ['DATABASE_URI', 'DATABASE_URL'],
    ['DATABAES_URL', 'DATABASE_URL'],
    ['REDIS_ULR', 'REDIS_URL'],
    ['LOGLEVEL', 'LOG_LEVEL'],
    ['RATE_LIMIT_MAXX', 'RATE_LIMIT_MAX'],
    ['METRIC_PORT', 'METRICS_PORT'],
    ['PORTS', 'PORT'],
    ['EMBEDED_DATABASE', 'EMBEDDED_DATABASE'],
  ])('when %s is set outside production, then it is returned with its suggestion, %s, and the start goes on', (name, suggestion) => {
    expect(loadConfig({ [name]: 'x' }).misspeltVariables).toEqual([{ name, suggestion, message: `${name} is not a setting; did you mean ${suggestion}?` }]);
  });

  test('when DATABSE_URL is set in production with DATABASE_URL, then ConfigError naming it and its suggestion', () => {
    expect(configError({ NODE_ENV: 'production', DATABASE_URL: MYSQL, DATABSE_URL: MYSQL })).toBe(
      'Invalid configuration: DATABSE_URL is not a setting; did you mean DATABASE_URL?',
    );
  });

  test('when DATABSE_URL is the only database in production, then one line with both problems', () => {
    expect(configError({ NODE_ENV: 'production', DATABSE_URL: MYSQL })).toBe(
      'Invalid configuration: DATABSE_URL is not a setting; did you mean DATABASE_URL?; DATABASE_URL: NODE_ENV=production needs an explicit database: ' +
        `set DATABASE_URL, or EMBEDDED_DATABASE=true to run on the embedded file ${EMBEDDED_DATABASE_PATH}`,
    );
  });

  test.each([
    ['a standard variable two edits from one of ours', 'HOME'],
    ['a standard variable of Node', 'NODE_OPTIONS'],
    ['the test suite variable', 'TEST_DATABASE_URL'],
    ['an OpenTelemetry variable', 'OTEL_SERVICE_NAME'],
    ['a lower-case name', 'database_url'],
    ['a mixed-case name', 'Database_Url'],
    ['a name far from every one of ours', 'MYSQL_ROOT_PASSWORD'],
    ['a short name two edits from PORT', 'PGPORT'],
    ['one of ours', 'DATABASE_URL'],
  ])('when %s (%s) is set, then nothing is reported, even in production', (_what, name) => {
    const env = { NODE_ENV: 'production', DATABASE_URL: MYSQL, [name]: name === 'DATABASE_URL' ? MYSQL : 'x' };
    expect(loadConfig(env).misspeltVariables).toEqual([]);
  });

  test('when a name is as near to two of ours, then the nearest is suggested', () => {
    expect(loadConfig({ METRICS_HOTS: 'x' }).misspeltVariables.map((variable) => variable.suggestion)).toEqual(['METRICS_HOST']);
  });
});
