/** Where each surface is served, defined once. */
export const SURFACE_PATHS = Object.freeze({
  graphql: '/graphql',
  /** spec "Versioning". */
  rest: '/v1',
  pets: '/v1/pets',
  /** The change feed (docs/events.md). */
  events: '/v1/events',
  /** The administration API (docs/admin.md): never granted by CORS. */
  admin: '/v1/admin',
  openapiJson: '/v1/openapi.json',
  openapiYaml: '/v1/openapi.yaml',
  /** Swagger UI. */
  docs: '/docs',
  healthz: '/healthz',
  readyz: '/readyz',
});
