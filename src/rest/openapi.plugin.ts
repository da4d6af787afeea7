import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { SECURITY_SCHEME, SHARED_SCHEMAS } from './openapi.schemas';
import { SWAGGER_UI_OPTIONS } from './swagger-ui.options';
import { contentSecurityPolicy } from '../http/security-headers';
import { SURFACE_PATHS } from '../surface-paths';

/** Listed as servers after this one (spec "Versioning"); each ends in /v1. */
export interface OpenapiServers {
  readonly publicBaseUrl?: string;
  readonly stagingBaseUrl?: string;
}

/** Makes the OpenAPI 3.1 document of `/v1` from the route schemas: call before the routes are registered. */
export async function describeWithOpenapi(app: FastifyInstance, config: OpenapiServers): Promise<void> {
  for (const schema of SHARED_SCHEMAS) app.addSchema(schema);
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Pet Store',
        version: '1.0.0',
        description:
          'Manage the animals of a pet store. Every operation but revokeCredentials needs an API key: `Authorization: Bearer <API_KEY>`. ' +
          'Another method on a known path answers 405 with `Allow`; an unknown path answers 404. Errors use the Error schema.',
      },
      servers: [
        { url: SURFACE_PATHS.rest, description: 'This server' },
        ...(config.publicBaseUrl ? [{ url: config.publicBaseUrl, description: 'Production' }] : []),
        ...(config.stagingBaseUrl ? [{ url: config.stagingBaseUrl, description: 'Staging' }] : []),
      ],
      tags: [
        { name: 'pets', description: 'The animals of the store.' },
        { name: 'events', description: 'The change feed: every pet created, once each, in one order (docs/events.md).' },
        { name: 'credentials', description: 'Leaked API keys, revoked by whoever finds them.' },
        {
          name: 'admin',
          description:
            'Administration (docs/admin.md): API keys, webhook endpoints, their deliveries and the audit trail. A secret key with `keys:admin` or `webhooks:admin`; never granted by CORS.',
        },
      ],
      components: {
        securitySchemes: {
          [SECURITY_SCHEME]: {
            type: 'http',
            scheme: 'bearer',
            description:
              'An API key, created with `npm run apikey -- create <name>`. Two kinds: a **secret** key (`pst_sk_…`) for servers ' +
              'and scripts may hold `pets:read` and `pets:write` (both by default), and the administration scopes `keys:admin` and `webhooks:admin` (never by default); a **publishable** key (`pst_pk_…`) for code ' +
              'shipped to browsers holds `pets:read` only, may be limited to listed origins, and is counted per visitor address. ' +
              "Each operation's `security` names the scope it needs; a key without it gets 403 `insufficient_scope`. " +
              'Keys expire (90 days by default); answers carry the expiry in `API-Key-Expires`.',
          },
        },
      },
      security: [{ [SECURITY_SCHEME]: [] }],
    },
    refResolver: {
      // Name shared schemas after their $id in components.schemas (Pet, NewPet, Error…).
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
}

/** Serves the document and Swagger UI (no CDN); no API key needed: they hold no data. */
export async function serveOpenapi(app: FastifyInstance): Promise<void> {
  app.get(SURFACE_PATHS.openapiJson, { schema: { hide: true } }, async () => app.swagger());
  app.get(SURFACE_PATHS.openapiYaml, { schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/yaml; charset=utf-8').send(app.swagger({ yaml: true })),
  );
  await app.register(fastifySwaggerUi, {
    routePrefix: SURFACE_PATHS.docs,
    ...SWAGGER_UI_OPTIONS,
    // No upgrade-insecure-requests: it would break /docs over plain HTTP from another machine.
    staticCSP: contentSecurityPolicy({
      'default-src': ["'self'"],
      'base-uri': ["'self'"],
      'frame-ancestors': ["'self'"],
      'img-src': ["'self'", 'data:'],
      'object-src': ["'none'"],
      'script-src': ["'self'"],
      'script-src-attr': ["'none'"],
      'style-src': ["'self'"],
    }),
  });
}
