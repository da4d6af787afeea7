import 'reflect-metadata';
import fastify, { type FastifyInstance } from 'fastify';
import type { DataSource } from 'typeorm';
import { ApiKey } from './auth/api-key.entity';
import { ApiKeyService } from './auth/api-key.service';
import { createAuthHooks } from './auth/auth.hook';
import { type Config, RATE_LIMIT_DEFAULTS } from './config';
import { AppError } from './errors/error-catalogue';
import { answerClientError, sendRestError } from './errors/rest-error.handler';
import { graphqlPlugin } from './graphql/graphql.plugin';
import { HTTP_LIMITS } from './http/http-limits';
import { parseJsonExactly } from './http/json-body.parser';
import { createRateLimiter } from './http/rate-limit';
import { hardenResponses } from './http/security-headers';
import { describeWithOpenapi, serveOpenapi } from './openapi/openapi.plugin';
import { petController } from './pets/pet.controller';
import { Pet } from './pets/pet.entity';
import { PetResolver } from './pets/pet.resolver';
import { PetService } from './pets/pet.service';
import { purgeHourly } from './idempotency/idempotency-purge';
import { IdempotencyService } from './idempotency/idempotency.service';

/** What the app is built from. */
export interface AppDependencies {
  config: Pick<Config, 'logLevel' | 'publicBaseUrl' | 'stagingBaseUrl'> & Partial<Pick<Config, 'nodeEnv' | 'corsOrigins' | 'rateLimit'>>;
  /** An initialised DataSource whose migrations have run. */
  dataSource: DataSource;
  /** Where the JSON log lines go; standard output by default. */
  logStream?: { write: (line: string) => void };
}

/**
 * Builds the HTTP app (does not listen): GraphQL at `/graphql` and the REST contract at
 * `/v1`, both over one PetResolver behind one guard (authentication, rate limit), plus the OpenAPI document
 * (`/v1/openapi.json`, `.yaml`) and Swagger UI (`/docs`). Closing the app stops Apollo; the
 * DataSource belongs to the caller.
 *
 * @returns a ready Fastify instance; call `listen()` or `inject()` on it.
 */
export async function buildApp({ config, dataSource, logStream }: AppDependencies): Promise<FastifyInstance> {
  const app = fastify({
    logger: { level: config.logLevel, redact: ['req.headers.authorization'], ...(logStream && { stream: logStream }) },
    // Requests Fastify or Node reject before routing (a bad URL, a malformed header) still
    // get the spec's Error body.
    frameworkErrors: (error, request, reply) => sendRestError(error, request, reply),
    clientErrorHandler: answerClientError,
    bodyLimit: HTTP_LIMITS.restBodyBytes,
    requestTimeout: HTTP_LIMITS.requestTimeoutMs,
    keepAliveTimeout: HTTP_LIMITS.keepAliveTimeoutMs,
    http: { maxHeaderSize: HTTP_LIMITS.maxHeaderBytes },
  });

  await hardenResponses(app, config.corsOrigins);

  const idempotency = new IdempotencyService(dataSource);
  const petResolver = new PetResolver(new PetService(dataSource.getRepository(Pet)), idempotency);
  purgeHourly(app, idempotency);
  const { identify, requireApiKey } = createAuthHooks(new ApiKeyService(dataSource.getRepository(ApiKey)));

  // Both surfaces take JSON bodies only, parsed without rounding; anything else is 415.
  app.removeContentTypeParser('text/plain');
  parseJsonExactly(app);
  app.setErrorHandler(sendRestError);
  app.setNotFoundHandler(async (request) => {
    throw new AppError('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`);
  });
  const limiter = await createRateLimiter(app, config.rateLimit ?? RATE_LIMIT_DEFAULTS);
  // Every operation on both surfaces: who is calling, how much they may, then the 401 if any.
  const guard = [identify, limiter.limit, requireApiKey];
  await describeWithOpenapi(app, config);
  await app.register(petController, { prefix: '/v1', petResolver, guard });
  await app.register(graphqlPlugin, { petResolver, guard, spend: limiter.spend, production: config.nodeEnv === 'production' });
  await serveOpenapi(app);
  await app.ready();
  return app;
}
