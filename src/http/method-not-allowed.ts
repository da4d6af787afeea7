import type { FastifyInstance, RouteOptions } from 'fastify';
import { AppError } from '../errors/error-catalogue';

/**
 * Answers every method but `allowed` (HEAD included where served) on `url` with 405 and `Allow`
 * (RFC 9110 §15.5.6). No API key: the set of methods is public.
 */
export function rejectOtherMethods(app: FastifyInstance, url: string, allowed: readonly string[], options: Pick<RouteOptions, 'errorHandler'> = {}): void {
  const header = [...allowed].sort().join(', ');
  app.route({
    method: app.supportedMethods.filter((method) => !allowed.includes(method)),
    url,
    schema: { hide: true },
    ...options,
    handler: async (request) => {
      // An allowed origin's preflight is answered before routing, so one here is from a refused origin.
      const origin = request.headers.origin;
      const message =
        request.method === 'OPTIONS' && origin && request.headers['access-control-request-method']
          ? `Cross-origin requests from ${origin} are not allowed: add it to CORS_ORIGINS (comma-separated origins) to allow them.`
          : `${request.method} is not allowed here; use ${header}.`;
      throw new AppError('METHOD_NOT_ALLOWED', message, { Allow: header });
    },
  });
}
