import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { Redis } from 'ioredis';
import type { Config } from '../config';
import { AppError } from '../errors/error-catalogue';

/** What one rate-limited client may spend, from configuration (README "Security"). */
export type RateLimitConfig = Config['rateLimit'];

/** The policy name in the RateLimit header fields (draft-ietf-httpapi-ratelimit-headers-10). */
const POLICY = 'default';

/**
 * Rate limiting with @fastify/rate-limit: per API key, or per IP address for requests without
 * a valid key. Counters are in memory, or in Redis when `redisUrl` is set, so that several
 * instances share them. A refused request is 429 TOO_MANY_REQUESTS with `Retry-After`;
 * every limited answer carries `RateLimit-Policy` and `RateLimit`.
 *
 * @returns `limit`, the onRequest hook to run after `identify`, and `spend`, which charges a
 *   request extra units (GraphQL charges by query cost) and throws 429 when they run out.
 */
export async function createRateLimiter(
  app: FastifyInstance,
  config: RateLimitConfig,
): Promise<{ limit: onRequestAsyncHookHandler; spend: (request: FastifyRequest, units: number) => Promise<void> }> {
  const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 1000 }) : undefined;
  if (redis) app.addHook('onClose', async () => void (await redis.quit()));
  await app.register(fastifyRateLimit, { global: false, redis, nameSpace: config.namespace, skipOnError: false });

  const windowMs = config.windowSeconds * 1000;
  const keyOf = (request: FastifyRequest) => (request.apiKeyId ? `key:${request.apiKeyId}` : `ip:${request.ip}`);
  const maxOf = (request: FastifyRequest) => (request.apiKeyId ? config.max : config.unauthenticatedMax);
  const tooMany = (seconds: number) =>
    new AppError('TOO_MANY_REQUESTS', `Rate limit reached: retry in ${seconds} s.`, { 'Retry-After': String(seconds) });

  const hook = app.rateLimit({
    max: async (request) => maxOf(request),
    timeWindow: windowMs,
    keyGenerator: keyOf,
    errorResponseBuilder: (_request, context) => tooMany(Math.ceil(context.ttl / 1000)),
  });
  const check = app.createRateLimit({ max: async (request) => maxOf(request), timeWindow: windowMs, keyGenerator: keyOf });

  // Restate the library's x-ratelimit-* headers as the draft's two fields.
  app.addHook('onSend', async (_request, reply: FastifyReply) => {
    const remaining = reply.getHeader('x-ratelimit-remaining');
    const reset = reply.getHeader('x-ratelimit-reset');
    const limit = reply.getHeader('x-ratelimit-limit');
    if (remaining === undefined) return;
    reply.removeHeader('x-ratelimit-remaining').removeHeader('x-ratelimit-reset').removeHeader('x-ratelimit-limit');
    reply.header('RateLimit-Policy', `"${POLICY}";q=${limit};w=${config.windowSeconds}`);
    reply.header('RateLimit', `"${POLICY}";r=${remaining};t=${reset}`);
  });

  return {
    limit: async function limit(request, reply) {
      await hook.call(app, request, reply);
    },
    spend: async (request, units) => {
      for (let i = 0; i < units; i++) {
        const result = await check(request);
        if (!result.isAllowed && result.isExceeded) throw tooMany(result.ttlInSeconds);
      }
    },
  };
}
