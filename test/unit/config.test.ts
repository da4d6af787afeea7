import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CONFIG_SPEC, ConfigError, EMBEDDED_DATABASE_PATH, loadConfig } from '../../src/config';
import { readTrustedDocuments } from '../../src/app';

/** A codegen manifest of one document, for TRUSTED_DOCUMENTS. */
const MANIFEST = path.join(mkdtempSync(path.join(tmpdir(), 'config-')), 'persisted-documents.json');
writeFileSync(MANIFEST, JSON.stringify({ [createHash('sha256').update('{ pets { id } }').digest('hex')]: '{ pets { id } }' }));

describe('loadConfig', () => {
  test('when nothing is set, then the embedded defaults', () => {
    expect(loadConfig({})).toEqual({
      port: 3000,
      host: '127.0.0.1',
      nodeEnv: 'development',
      logLevel: 'info',
      database: { type: 'sqlite', path: path.resolve(EMBEDDED_DATABASE_PATH) },
      corsOrigins: [],
      trustProxy: false,
      rateLimit: { max: 600, unauthenticatedMax: 60, windowSeconds: 60, counterPrefix: 'petstore:rate-limit:' },
      redis: { onFailure: 'serve-local', keyChangesChannel: 'petstore:api-key-changes', petFeedChannel: 'petstore:pet-feed' },
      metrics: { port: 9464, host: '127.0.0.1' },
      shutdown: { drainSeconds: 0, graceSeconds: 10 },
      databaseConnectAttempts: 5,
      migrateOnStart: true,
      slowStatementMs: 500,
      apiKeyCacheSeconds: 5,
      trustedDocumentManifests: [],
      misspeltVariables: [],
      deprecatedVariables: [],
      tracing: {},
      webhooks: { deliveries: true, allowHttp: false, allowPrivateTargets: false, retrySchedule: [0, 5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400] },
    });
  });

  test('when every key is set, then each is used', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      DATABASE_URL: 'mysql://user:pass@db:3306/petstore',
      CORS_ORIGINS: 'https://app.example.com, http://localhost:5173',
      TRUST_PROXY: '10.0.0.0/8, 192.168.1.7, fd00::/8',
      RATE_LIMIT_MAX: '100',
      RATE_LIMIT_UNAUTHENTICATED_MAX: '10',
      RATE_LIMIT_WINDOW_SECONDS: '30',
      REDIS_URL: 'redis://cache:6379',
      REDIS_NAMESPACE: 'staging:',
      RATE_LIMIT_ON_REDIS_FAILURE: 'refuse',
      DATABASE_REPLICA_URLS: 'mysql://user:pass@replica-1:3306/petstore, mysql://user:pass@replica-2:3306/petstore',
      DATABASE_REPLICA_MAX_LAG_SECONDS: '3',
      DATABASE_CONNECT_ATTEMPTS: '2',
      DATABASE_MIGRATE_ON_START: 'false',
      DATABASE_SLOW_STATEMENT_MS: '250',
      API_KEY_CACHE_SECONDS: '0',
      METRICS_PORT: '9100',
      METRICS_HOST: '10.0.0.5',
      SHUTDOWN_DRAIN_SECONDS: '5',
      SHUTDOWN_GRACE_SECONDS: '30',
      TRUSTED_DOCUMENTS: MANIFEST,
      WEBHOOK_RETRY_SCHEDULE: '0,2.5',
      WEBHOOK_DELIVERIES: 'false',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    });
    expect(config).toEqual({
      port: 8080,
      host: '0.0.0.0',
      nodeEnv: 'production',
      logLevel: 'warn',
      database: {
        type: 'mysql',
        url: 'mysql://user:pass@db:3306/petstore',
        replicaUrls: ['mysql://user:pass@replica-1:3306/petstore', 'mysql://user:pass@replica-2:3306/petstore'],
        replicaMaxLagSeconds: 3,
      },
      corsOrigins: ['https://app.example.com', 'http://localhost:5173'],
      trustProxy: ['10.0.0.0/8', '192.168.1.7', 'fd00::/8'],
      rateLimit: { max: 100, unauthenticatedMax: 10, windowSeconds: 30, counterPrefix: 'staging:rate-limit:' },
      redis: { url: 'redis://cache:6379', onFailure: 'refuse', keyChangesChannel: 'staging:api-key-changes', petFeedChannel: 'staging:pet-feed' },
      metrics: { port: 9100, host: '10.0.0.5' },
      shutdown: { drainSeconds: 5, graceSeconds: 30 },
      databaseConnectAttempts: 2,
      migrateOnStart: false,
      slowStatementMs: 250,
      apiKeyCacheSeconds: 0,
      trustedDocumentManifests: [MANIFEST],
      misspeltVariables: [],
      deprecatedVariables: [],
      tracing: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' },
      webhooks: { deliveries: false, allowHttp: false, allowPrivateTargets: false, retrySchedule: [0, 2.5] },
    });
  });

  test('when the base addresses are set, then they are kept without a trailing slash', () => {
    const config = loadConfig({ PUBLIC_BASE_URL: 'https://api.example.com/v1/', STAGING_BASE_URL: 'https://staging.example.com/v1' });
    expect(config).toMatchObject({ publicBaseUrl: 'https://api.example.com/v1', stagingBaseUrl: 'https://staging.example.com/v1' });
  });

  test('when read, then the configuration is frozen', () => {
    const config = loadConfig({});
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.database)).toBe(true);
  });

  test.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['NODE_ENV', 'staging'],
    ['LOG_LEVEL', 'loud'],
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_URL', 'postgres://db:5432/x'],
    ['DATABASE_URL', 'mysql://db:3306'],
    ['PUBLIC_BASE_URL', 'https://api.example.com'],
    ['STAGING_BASE_URL', 'ftp://staging.example.com/v1'],
    ['CORS_ORIGINS', 'https://app.example.com/path'],
    ['CORS_ORIGINS', 'not an origin'],
    ['RATE_LIMIT_MAX', '0'],
    ['RATE_LIMIT_WINDOW_SECONDS', '1.5'],
    ['REDIS_URL', 'http://cache:6379'],
    ['RATE_LIMIT_ON_REDIS_FAILURE', 'fail-open'],
    ['DATABASE_REPLICA_URLS', 'mysql://replica:3306'],
    ['TRUST_PROXY', 'nginx'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '0'],
    ['DATABASE_CONNECT_ATTEMPTS', '0'],
    ['METRICS_PORT', '3000'],
    ['SHUTDOWN_DRAIN_SECONDS', '-1'],
    ['SHUTDOWN_GRACE_SECONDS', '0'],
    ['API_KEY_CACHE_SECONDS', '1.5'],
    ['REDIS_NAMESPACE', ''],
    ['REDIS_NAMESPACE', '  '],
    ['RATE_LIMIT_NAMESPACE', ''],
    ['PET_EVENTS_CHANNEL', ''],
  ])('when %s is %p, then ConfigError naming it', (key, value) => {
    expect(() => loadConfig({ [key]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [key]: value })).toThrow(new RegExp(`${key}: `));
  });

  test('when a trusted document manifest is malformed or missing, then reading it is one line naming the variable, the file and the problem', () => {
    const bad = path.join(path.dirname(MANIFEST), 'bad.json');
    writeFileSync(bad, '{"format": "apollo-persisted-query-manifest", "version": 2, "operations": []}');
    expect(() => readTrustedDocuments(loadConfig({ TRUSTED_DOCUMENTS: `${MANIFEST}, ${bad}` }))).toThrow(
      new ConfigError(`Invalid configuration: TRUSTED_DOCUMENTS: ${bad}: version must be equal to 1`),
    );
    expect(() => readTrustedDocuments(loadConfig({ TRUSTED_DOCUMENTS: 'no/such/manifest.json' }))).toThrow(
      new ConfigError('Invalid configuration: TRUSTED_DOCUMENTS: no/such/manifest.json: cannot be read (ENOENT)'),
    );
    expect(readTrustedDocuments(loadConfig({ TRUSTED_DOCUMENTS: MANIFEST })).size).toBe(1);
  });

  test('when the old Redis names are set, then they keep their meaning and each is reported deprecated; REDIS_NAMESPACE names everything else', () => {
    const config = loadConfig({ REDIS_NAMESPACE: 'eu:', RATE_LIMIT_NAMESPACE: 'eu-limits:', PET_EVENTS_CHANNEL: 'eu:pets' });
    expect(config.rateLimit.counterPrefix).toBe('eu-limits:');
    expect(config.redis).toMatchObject({ keyChangesChannel: 'eu-limits:api-key-changes', petFeedChannel: 'eu:pets' });
    expect(config.deprecatedVariables.map((variable) => variable.name)).toEqual(['RATE_LIMIT_NAMESPACE', 'PET_EVENTS_CHANNEL']);
    expect(config.deprecatedVariables[0].message).toMatch(/^RATE_LIMIT_NAMESPACE is deprecated .*REDIS_NAMESPACE/);
    expect(loadConfig({ REDIS_NAMESPACE: 'eu:' }).deprecatedVariables).toEqual([]);
  });

  test('when read replicas are set without a primary, then ConfigError', () => {
    expect(() => loadConfig({ DATABASE_REPLICA_URLS: 'mysql://replica:3306/petstore' })).toThrow(/DATABASE_REPLICA_URLS: needs DATABASE_URL/);
  });

  test('when TRUST_PROXY is a number, then it is the count of trusted hops', () => {
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(1);
  });

  test('when METRICS_HOST is unset, then metrics listen where the API does', () => {
    expect(loadConfig({ HOST: '0.0.0.0' }).metrics).toEqual({ port: 9464, host: '0.0.0.0' });
  });

  test('when METRICS_PORT is unset, then it follows PORT (PORT + 6464), so a second instance needs only its own PORT', () => {
    expect(loadConfig({ PORT: '3001' }).metrics.port).toBe(9465);
    expect(loadConfig({ PORT: '3001', METRICS_PORT: '9100' }).metrics.port).toBe(9100);
    expect(() => loadConfig({ PORT: '60000' })).toThrow(/METRICS_PORT: unset, it would be PORT \+ 6464 = 66464, past 65535: set it/);
    expect(loadConfig({ PORT: '60000', METRICS_PORT: '9464' }).metrics.port).toBe(9464);
  });

  test('when several keys are bad, then one error names them all', () => {
    expect(() => loadConfig({ PORT: 'x', NODE_ENV: 'y', LOG_LEVEL: 'z' })).toThrow(/PORT: .*NODE_ENV: .*LOG_LEVEL: /);
  });
});

describe('the table of docs/configuration.md', () => {
  /** Its rows: each variable and its Default cell. */
  function configurationTable(): Map<string, string> {
    const text = readFileSync(path.resolve(__dirname, '..', '..', 'docs', 'configuration.md'), 'utf8');
    return new Map([...text.matchAll(/^\| `([A-Z0-9_]+)` \| ([^|]*) \|/gm)].map((row) => [row[1], row[2].trim()]));
  }

  /** The names `loadConfig` asks the environment for, whatever their values. */
  function variablesLoadConfigReads(): string[] {
    const read = new Set<string>();
    const env = new Proxy<NodeJS.ProcessEnv>(
      {},
      {
        get: (_target, key) => {
          if (typeof key === 'string') read.add(key);
          return undefined;
        },
        has: (_target, key) => {
          if (typeof key === 'string') read.add(key);
          return false;
        },
      },
    );
    loadConfig(env);
    return [...read];
  }

  test('when it is read, then it lists every variable of the spec, and no other', () => {
    expect([...configurationTable().keys()].sort()).toEqual(Object.keys(CONFIG_SPEC).sort());
  });

  test('when loadConfig reads an empty environment, then every variable it asks for is in the table, and every row is asked for', () => {
    expect(variablesLoadConfigReads().sort()).toEqual([...configurationTable().keys()].sort());
  });

  test('when a variable has a plain default (a number, a string, true), then the table shows that default', () => {
    const table = configurationTable();
    for (const [key, spec] of Object.entries(CONFIG_SPEC)) {
      if (typeof spec.default === 'number' || typeof spec.default === 'string' || spec.default === true) {
        expect({ key, default: table.get(key) }).toEqual({ key, default: `\`${spec.default}\`` });
      }
    }
  });
});
