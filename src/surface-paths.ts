/**
 * Where each surface is served, defined once: the routes, the landing page and the start-up line,
 * the metrics' labels and the getPet deprecation's successor read their paths from here.
 */
export const SURFACE_PATHS = Object.freeze({
  /** GraphQL over HTTP, its subscriptions over WebSocket, and in a browser the playground. */
  graphql: '/graphql',
  /** The REST contract's base path (spec "Versioning": version 1 at /v1). */
  rest: '/v1',
  pets: '/v1/pets',
  openapiJson: '/v1/openapi.json',
  openapiYaml: '/v1/openapi.yaml',
  /** Swagger UI of the REST contract. */
  docs: '/docs',
  healthz: '/healthz',
  readyz: '/readyz',
});
