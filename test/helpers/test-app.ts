import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { DataSource } from 'typeorm';
import type { ApiKeyService } from '../../src/auth/api-key.service';
import { type Config, loadConfig } from '../../src/config';
import { type ServiceOptions, startService } from '../../src/service';
import type { Database } from '../../src/database/database';
import type { DatabaseConfig } from '../../src/database/database-config';
import { Pet } from '../../src/pets/pet.entity';
import { PET_FEED_LIMITS } from '../../src/limits';
import { assertMatchesOpenapi } from './openapi-validator';
import { THROUGH_PRISM, assertNoResponseViolations, prismCounts, startPrism } from './prism-proxy';
import { createTestDatabase } from './test-database';

/** A running app on a free port, over a real database of its own. */
export interface TestApp {
  /** e.g. http://127.0.0.1:41234 */
  url: string;
  /** With TEST_THROUGH_PRISM=1: Prism's URL; `request()` sends /v1 requests through it. */
  prismUrl?: string;
  /** A valid API key, created through `apiKeys`. */
  apiKey: string;
  app: FastifyInstance;
  database: Database;
  /** `database.writer`, the primary. */
  dataSource: DataSource;
  /** The app's own service: a key revoked through it is refused at once. */
  apiKeys: ApiKeyService;
  /** Deletes every pet (keys stay). */
  clearPets: () => Promise<void>;
  close: () => Promise<void>;
}

/**
 * A whole configuration for a test app, read by `loadConfig` (docs/configuration.md) from the
 * test defaults (silent logs; rate limits out of the way, with a namespace of their own; no webhook deliveries) and
 * `env` over them; nothing is read from the process environment.
 *
 * @param env - variables as the process environment holds them (strings), e.g. `{ RATE_LIMIT_MAX: '3' }`.
 * @throws ConfigError when a value is bad, as at start-up.
 */
export function testConfig(env: Readonly<Record<string, string>> = {}): Config {
  return loadConfig({
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: '1000000000',
    RATE_LIMIT_UNAUTHENTICATED_MAX: '1000000000',
    REDIS_NAMESPACE: `test-${randomUUID()}:`,
    // Webhook tests run dispatchers of their own, with short limits; an app delivers only when a test says so.
    WEBHOOK_DELIVERIES: 'false',
    // A test app runs on the database startTestApp gives it, never on the configuration's: production's demand for an
    // explicit one (docs/configuration.md "Production") is met here, unless the test names a DATABASE_URL.
    ...(env.NODE_ENV === 'production' && env.DATABASE_URL === undefined && { EMBEDDED_DATABASE: 'true' }),
    ...env,
  });
}

/**
 * Starts the production service (startService) with test settings on a real database, and listens on 127.0.0.1 on a
 * free port. Its apps may share one embedded file within this process (no lock against another process).
 *
 * @param options.database - open this database instead of a fresh test one (it is then not dropped).
 * @param options.createKey - create an API key (default true).
 * @param options.env - environment variables for the app's configuration, over the test defaults (see {@link testConfig}).
 * @param options.observe - a logger, metrics or service state to build the app with.
 */
export async function startTestApp(
  options: {
    database?: DatabaseConfig;
    createKey?: boolean;
    env?: Readonly<Record<string, string>>;
    observe?: Pick<ServiceOptions, 'logger' | 'metrics' | 'state'>;
  } = {},
): Promise<TestApp> {
  const config = testConfig(options.env);
  const owned = options.database ? null : await createTestDatabase();
  const service = await startService(config, { database: options.database ?? owned!.database, lockEmbeddedFile: false, ...options.observe });
  const { app, database, apiKeys } = service;
  const dataSource = database.writer;
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const apiKey = options.createKey === false ? '' : (await apiKeys.create('test')).key;
  const prism = THROUGH_PRISM ? await startPrism(url) : null;
  return {
    url,
    prismUrl: prism?.url,
    apiKey,
    app,
    database,
    dataSource,
    apiKeys,
    clearPets: async () => {
      await dataSource.getRepository(Pet).clear();
    },
    close: async () => {
      if (prism) {
        await prism.stop();
        const { requests, responseViolations, requestViolations } = prismCounts;
        console.info(`Prism proxy: ${requests} responses checked, ${responseViolations} response violations, ${requestViolations} request violations`);
      }
      await service.close();
      await owned?.drop();
    },
  };
}

/** A parsed HTTP response. */
export interface HttpResult {
  status: number;
  headers: Headers;
  /** Parsed JSON, or the raw text when the body is not JSON. */
  body: any;
}

/**
 * Sends one HTTP request with Node's fetch. Every answer from a documented REST operation
 * is checked against contract/openapi.json (the call throws when it does not match).
 *
 * @param init.body - an object is sent as JSON; a string or bytes (a Uint8Array) are sent as they are.
 * @param init.apiKey - sent as `Authorization: Bearer …` unless null.
 * @param init.direct - bypass Prism (TEST_THROUGH_PRISM=1) for a request Prism cannot pass on
 *   verbatim: Prism re-parses bodies and query strings, rounding numbers and answering
 *   malformed JSON itself.
 */
export async function request(
  target: TestApp,
  method: string,
  path: string,
  init: { body?: unknown; apiKey?: string | null; headers?: Record<string, string>; direct?: boolean } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = { ...init.headers };
  const apiKey = init.apiKey === undefined ? target.apiKey : init.apiKey;
  if (apiKey !== null) headers.authorization ??= `Bearer ${apiKey}`;
  let body: string | Uint8Array | undefined;
  if (typeof init.body === 'string' || init.body instanceof Uint8Array) body = init.body;
  else if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  const viaPrism = target.prismUrl !== undefined && path.startsWith('/v1/') && !init.direct;
  const response = await fetch(viaPrism ? target.prismUrl + path.slice('/v1'.length) : target.url + path, { method, headers, body });
  if (viaPrism) assertNoResponseViolations(`${method} ${path}`, response.headers);
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text for the assertion to show
  }
  const result = { status: response.status, headers: response.headers, body: parsed };
  assertMatchesOpenapi(method, path, result);
  return result;
}

/**
 * POSTs a GraphQL operation to /graphql.
 *
 * @param init.accept - the `Accept` header; fetch's default is a bare wildcard, which Apollo
 *   answers in `application/json` (docs/graphql.md "Status codes": request errors are then 200).
 */
export function graphql(
  target: TestApp,
  query: string,
  variables?: Record<string, unknown>,
  init: { apiKey?: string | null; accept?: string } = {},
): Promise<HttpResult> {
  return request(target, 'POST', '/graphql', { body: { query, variables }, apiKey: init.apiKey, headers: init.accept ? { accept: init.accept } : undefined });
}

/**
 * A GraphQL answer's body without its top-level `extensions` (the price and the rate limit's
 * status, which every answer carries: docs/security.md "Limits"): what the operation itself answered.
 */
export function answerOf(body: any): any {
  const { extensions: _priceAndRateLimit, ...answer } = body;
  return answer;
}

/** Stores a pet through the REST API and returns it. */
export async function createPet(target: TestApp, overrides: Record<string, unknown> = {}): Promise<any> {
  const result = await request(target, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1, ...overrides } });
  if (result.status !== 201) throw new Error(`createPet failed: ${result.status} ${JSON.stringify(result.body)}`);
  return result.body;
}

/** Counts pets straight from the database. */
export function countPets(target: TestApp): Promise<number> {
  return target.dataSource.getRepository(Pet).count();
}

/**
 * Waits until every stored pet has its feed position and the app has had the time to read it: a subscription opened
 * after this starts after them ("from now"), so it receives only the pets created afterwards. A pet answered 201 just
 * before a subscription opened may otherwise still reach it: the feed's "now" is its last position, not the clock.
 */
export async function settleFeed(target: TestApp): Promise<void> {
  const giveUpAt = Date.now() + 10_000;
  const unstamped = async () => Number((await target.dataSource.query('SELECT COUNT(*) AS n FROM pet WHERE seq IS NULL'))[0].n);
  while ((await unstamped()) > 0) {
    if (Date.now() > giveUpAt) throw new Error('the feed did not stamp the stored pets within 10 s');
    await sleep(10);
  }
  // The sequencer's instance reads at once; any other within one tick.
  await sleep(PET_FEED_LIMITS.followEveryMs);
}
