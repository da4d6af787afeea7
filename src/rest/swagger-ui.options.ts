import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';

export const SWAGGER_UI_TITLE = 'Pet Store gateway — REST API';

/** A paw print, in place of @fastify/swagger-ui's Fastify icons. */
const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><g fill="#49cc90">' +
  '<ellipse cx="16" cy="22" rx="7" ry="6"/><circle cx="6.5" cy="13" r="3"/><circle cx="12.5" cy="7" r="3"/>' +
  '<circle cx="19.5" cy="7" r="3"/><circle cx="25.5" cy="13" r="3"/></g></svg>';

/**
 * Swagger UI at /docs (docs/explorers.md). BaseLayout drops the standalone top bar, whose
 * "Explore" box loads any URL.
 */
export const SWAGGER_UI_OPTIONS = {
  uiConfig: { layout: 'BaseLayout', validatorUrl: null, tryItOutEnabled: true, displayRequestDuration: true },
  theme: {
    title: SWAGGER_UI_TITLE,
    favicon: [{ filename: 'favicon.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: FAVICON_SVG }],
  },
  // null: no logo at all (the plugin replaces only `undefined` by the Fastify logo; its types omit null).
  logo: null as unknown as FastifySwaggerUiOptions['logo'],
} as const satisfies Partial<FastifySwaggerUiOptions>;
