import type { FastifyInstance, RouteOptions } from 'fastify';
import { AppError } from '../errors/error-catalogue';

/**
 * Answers every other method on a known path with 405 METHOD_NOT_ALLOWED and an `Allow`
 * header (RFC 9110 §15.5.6). Needs no API key: the set of methods is public.
 *
 * @param app - the Fastify scope whose error handler renders the error.
 * @param url - the route path, as registered for the allowed methods.
 * @param allowed - every method the path serves, HEAD included where it is served.
 * @param options.errorHandler - renders the 405 instead of the scope's handler (the path's own error shape).
 */
export function rejectOtherMethods(app: FastifyInstance, url: string, allowed: readonly string[], options: Pick<RouteOptions, 'errorHandler'> = {}): void {
  const header = [...allowed].sort().join(', ');
  app.route({
    method: app.supportedMethods.filter((method) => !allowed.includes(method)),
    url,
    schema: { hide: true },
    ...options,
    handler: async (request) => {
      throw new AppError('METHOD_NOT_ALLOWED', `${request.method} is not allowed here; use ${header}.`, { Allow: header });
    },
  });
}
