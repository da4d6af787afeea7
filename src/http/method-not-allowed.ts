import type { FastifyInstance, RouteOptions } from 'fastify';
import { AppError } from '../errors/error-catalogue';

/**
 * Answers every other method on a known path with 405 METHOD_NOT_ALLOWED and an `Allow`
 * header (RFC 9110 §15.5.6). Needs no API key: the set of methods is public. A CORS preflight
 * gets here only from an origin CORS does not allow (an allowed one is answered 204 before
 * routing): its message names CORS_ORIGINS, where origins are allowed.
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
      // A browser's CORS preflight reaches this only when its origin is not allowed: say where origins are allowed.
      const origin = request.headers.origin;
      const message =
        request.method === 'OPTIONS' && origin && request.headers['access-control-request-method']
          ? `Cross-origin requests from ${origin} are not allowed: add it to CORS_ORIGINS (comma-separated origins) to allow them.`
          : `${request.method} is not allowed here; use ${header}.`;
      throw new AppError('METHOD_NOT_ALLOWED', message, { Allow: header });
    },
  });
}
