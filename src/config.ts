import { isIP } from 'node:net';
import path from 'node:path';
import { bool, cleanEnv, host, makeValidator, port, str } from 'envalid';
import { API_KEY_CACHE } from './auth/api-key.service';
import type { DatabaseConfig } from './database/database-config';
import type { RateLimitConfig } from './http/rate-limit';
import { LOG_LEVELS, type LogLevel } from './operations/logger';
import { parsePositiveInteger } from './validation/positive-integer';

/** Validated, frozen service configuration. */
export interface Config {
  /** TCP port the HTTP server listens on (1-65535). */
  readonly port: number;
  /** Interface the HTTP server binds to. */
  readonly host: string;
  readonly nodeEnv: 'development' | 'test' | 'production';
  /** pino level name. */
  readonly logLevel: LogLevel;
  readonly database: DatabaseConfig;
  /** Public base addresses listed as OpenAPI servers (spec "Versioning"); each ends in /v1. */
  readonly publicBaseUrl?: string;
  readonly stagingBaseUrl?: string;
  /**
   * Which proxies in front may set X-Forwarded-For (Fastify's `trustProxy`): `false` (none,
   * the default), a hop count, or proxy addresses and CIDR ranges.
   */
  readonly trustProxy: false | number | readonly string[];
  /** Browser origins allowed by CORS; none (CORS closed) by default. */
  readonly corsOrigins: readonly string[];
  readonly rateLimit: RateLimitConfig;
  /** The Prometheus endpoint `/metrics`, on a listener of its own (README "Operations"). */
  readonly metrics: { readonly port: number; readonly host: string };
  /** SIGTERM/SIGINT handling (README "Operations"), in seconds. */
  readonly shutdown: {
    /** How long `/readyz` fails before the server stops accepting, so load balancers move away. */
    readonly drainSeconds: number;
    /** How long in-flight requests may take to finish once the server stops accepting. */
    readonly graceSeconds: number;
  };
  /**
   * How long a key lookup's answer (found active, or unknown/revoked) is reused without asking
   * the database, in seconds (0: always ask). Bounds how late a revocation made by another
   * process takes effect here.
   */
  readonly apiKeyCacheSeconds: number;
  /** Whether start-up applies pending migrations (under the migration lock). */
  readonly migrateOnStart: boolean;
  /** How many times start-up tries to reach the database (with doubling pauses from 0.5 s) before it gives up. */
  readonly databaseConnectAttempts: number;
}

/** Rate limits when the environment sets none. */
export const RATE_LIMIT_DEFAULTS = Object.freeze({ max: 600, unauthenticatedMax: 60, windowSeconds: 60, namespace: 'petstore-rate-limit:' });

/** Parses an absolute URL whose scheme is one of `schemes`; the error shows `example`. */
function parseUrl(input: string, schemes: readonly string[], example: string): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new Error(`must be a URL such as ${example}`);
  }
  if (!schemes.includes(url.protocol)) throw new Error(`must be a URL such as ${example}`);
  return url;
}

const redisUrl = makeValidator<string>((input) => {
  parseUrl(input, ['redis:', 'rediss:'], 'redis://host:6379');
  return input;
});

const positiveInteger = makeValidator<number>((input) => {
  const value = parsePositiveInteger(input);
  if (value === undefined) throw new Error('must be a positive integer');
  return value;
});

const nonNegativeInteger = makeValidator<number>((input) => {
  const value = input === '0' ? 0 : parsePositiveInteger(input);
  if (value === undefined) throw new Error('must be 0 or a positive integer');
  return value;
});

const trustProxy = makeValidator<false | number | string[]>((input) => {
  const hops = parsePositiveInteger(input);
  if (hops !== undefined) return hops;
  const entries = input.split(',').map((entry) => entry.trim()).filter(Boolean);
  for (const entry of entries) {
    const [address, prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 6 ? 128 : 32));
    if (family === 0 || !prefixOk || rest.length > 0) {
      throw new Error(`${entry} is not a hop count, an IP address or a CIDR range such as 10.0.0.0/8`);
    }
  }
  return entries.length > 0 ? entries : false;
});

/** Raised when the environment holds bad values; the message names every bad key. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Where the embedded database lives when DATABASE_URL is absent (relative to the working directory). */
export const EMBEDDED_DATABASE_PATH = path.join('data', 'petstore.sqlite');

function checkMysqlUrl(input: string): string {
  const url = parseUrl(input, ['mysql:'], 'mysql://user:pass@host:3306/db');
  if (url.pathname.length <= 1) throw new Error('must name a database, as in mysql://user:pass@host:3306/db');
  return input;
}

const mysqlUrl = makeValidator<string>(checkMysqlUrl);

const mysqlUrlList = makeValidator<string[]>((input) => {
  const urls = input.split(',').map((url) => url.trim()).filter(Boolean);
  return urls.map(checkMysqlUrl);
});

const baseUrl = makeValidator<string>((input) => {
  const url = parseUrl(input, ['http:', 'https:'], 'https://api.example.com/v1');
  if (!url.pathname.replace(/\/$/, '').endsWith('/v1')) {
    throw new Error('must be an http(s) URL whose path ends in /v1');
  }
  return input.replace(/\/$/, '');
});

const originList = makeValidator<string[]>((input) => {
  const origins = input.split(',').map((origin) => origin.trim()).filter(Boolean);
  for (const origin of origins) {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new Error(`${origin} is not an origin such as https://app.example.com`);
    }
    if (url.origin !== origin) throw new Error(`${origin} is not an origin (scheme://host[:port], no path)`);
  }
  return origins;
});

/**
 * Reads and validates the configuration (see README, "Configuration").
 *
 * @param env - the environment to read, normally `process.env`: PORT (default 3000), HOST
 *   (default 127.0.0.1), DATABASE_URL (mysql://…; absent → embedded SQLite under ./data/),
 *   NODE_ENV (development | test | production, default development), LOG_LEVEL (default info),
 *   PUBLIC_BASE_URL and STAGING_BASE_URL (optional, http(s) URLs ending in /v1), TRUST_PROXY
 *   (hop count or comma-separated proxy addresses/CIDRs; default none), CORS_ORIGINS
 *   (comma-separated origins, default none), RATE_LIMIT_MAX (600), RATE_LIMIT_UNAUTHENTICATED_MAX (60),
 *   RATE_LIMIT_WINDOW_SECONDS (60), REDIS_URL (optional redis:// URL for shared counters),
 *   RATE_LIMIT_NAMESPACE (prefix of the counters' keys, for several deployments on one Redis),
 *   DATABASE_REPLICA_URLS (comma-separated mysql:// read replicas; needs DATABASE_URL),
 *   DATABASE_CONNECT_ATTEMPTS (5), DATABASE_MIGRATE_ON_START (true), METRICS_PORT (9464, not PORT), METRICS_HOST (default HOST),
 *   SHUTDOWN_DRAIN_SECONDS (0), SHUTDOWN_GRACE_SECONDS (10), API_KEY_CACHE_SECONDS (5).
 * @returns a frozen {@link Config}.
 * @throws ConfigError naming every bad key at once.
 */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const clean = cleanEnv(
    env,
    {
      PORT: port({ default: 3000 }),
      HOST: host({ default: '127.0.0.1' }),
      DATABASE_URL: mysqlUrl({ default: undefined }),
      NODE_ENV: str({ choices: ['development', 'test', 'production'] as const, default: 'development' }),
      LOG_LEVEL: str({ choices: LOG_LEVELS, default: 'info' }),
      PUBLIC_BASE_URL: baseUrl({ default: undefined }),
      STAGING_BASE_URL: baseUrl({ default: undefined }),
      CORS_ORIGINS: originList({ default: [] }),
      TRUST_PROXY: trustProxy({ default: false }),
      RATE_LIMIT_MAX: positiveInteger({ default: RATE_LIMIT_DEFAULTS.max }),
      RATE_LIMIT_UNAUTHENTICATED_MAX: positiveInteger({ default: RATE_LIMIT_DEFAULTS.unauthenticatedMax }),
      RATE_LIMIT_WINDOW_SECONDS: positiveInteger({ default: RATE_LIMIT_DEFAULTS.windowSeconds }),
      REDIS_URL: redisUrl({ default: undefined }),
      RATE_LIMIT_NAMESPACE: str({ default: RATE_LIMIT_DEFAULTS.namespace }),
      DATABASE_REPLICA_URLS: mysqlUrlList({ default: [] }),
      DATABASE_CONNECT_ATTEMPTS: positiveInteger({ default: 5 }),
      DATABASE_MIGRATE_ON_START: bool({ default: true }),
      API_KEY_CACHE_SECONDS: nonNegativeInteger({ default: API_KEY_CACHE.ttlMs / 1000 }),
      METRICS_PORT: port({ default: 9464 }),
      METRICS_HOST: host({ default: undefined }),
      SHUTDOWN_DRAIN_SECONDS: nonNegativeInteger({ default: 0 }),
      SHUTDOWN_GRACE_SECONDS: positiveInteger({ default: 10 }),
    },
    {
      reporter: ({ errors }) => {
        const bad = Object.entries(errors).map(([key, error]) => `${key}: ${(error as Error).message}`);
        if (bad.length > 0) throw new ConfigError(`Invalid configuration: ${bad.join('; ')}`);
      },
    },
  );
  const crossChecks = [
    clean.METRICS_PORT === clean.PORT && 'METRICS_PORT: must differ from PORT',
    clean.DATABASE_REPLICA_URLS.length > 0 && !clean.DATABASE_URL && 'DATABASE_REPLICA_URLS: needs DATABASE_URL (the primary)',
  ].filter((problem): problem is string => typeof problem === 'string');
  if (crossChecks.length > 0) throw new ConfigError(`Invalid configuration: ${crossChecks.join('; ')}`);
  return Object.freeze({
    port: clean.PORT,
    host: clean.HOST,
    nodeEnv: clean.NODE_ENV,
    logLevel: clean.LOG_LEVEL,
    database: Object.freeze(
      clean.DATABASE_URL
        ? {
            type: 'mysql' as const,
            url: clean.DATABASE_URL,
            ...(clean.DATABASE_REPLICA_URLS.length > 0 && { replicaUrls: Object.freeze([...clean.DATABASE_REPLICA_URLS]) }),
          }
        : { type: 'sqlite' as const, path: path.resolve(EMBEDDED_DATABASE_PATH) },
    ),
    trustProxy: Array.isArray(clean.TRUST_PROXY) ? Object.freeze([...clean.TRUST_PROXY]) : clean.TRUST_PROXY,
    corsOrigins: Object.freeze([...clean.CORS_ORIGINS]),
    rateLimit: Object.freeze({
      max: clean.RATE_LIMIT_MAX,
      unauthenticatedMax: clean.RATE_LIMIT_UNAUTHENTICATED_MAX,
      windowSeconds: clean.RATE_LIMIT_WINDOW_SECONDS,
      namespace: clean.RATE_LIMIT_NAMESPACE,
      ...(clean.REDIS_URL && { redisUrl: clean.REDIS_URL }),
    }),
    metrics: Object.freeze({ port: clean.METRICS_PORT, host: clean.METRICS_HOST ?? clean.HOST }),
    shutdown: Object.freeze({ drainSeconds: clean.SHUTDOWN_DRAIN_SECONDS, graceSeconds: clean.SHUTDOWN_GRACE_SECONDS }),
    databaseConnectAttempts: clean.DATABASE_CONNECT_ATTEMPTS,
    migrateOnStart: clean.DATABASE_MIGRATE_ON_START,
    apiKeyCacheSeconds: clean.API_KEY_CACHE_SECONDS,
    ...(clean.PUBLIC_BASE_URL && { publicBaseUrl: clean.PUBLIC_BASE_URL }),
    ...(clean.STAGING_BASE_URL && { stagingBaseUrl: clean.STAGING_BASE_URL }),
  });
}
