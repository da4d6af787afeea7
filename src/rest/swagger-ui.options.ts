import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui';

/** The `<title>` of the Swagger UI page at /docs. */
export const SWAGGER_UI_TITLE = 'Pet Store gateway — REST API';

/** The page's icon, a paw print, in place of @fastify/swagger-ui's Fastify icons. */
const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><g fill="#49cc90">' +
  '<ellipse cx="16" cy="22" rx="7" ry="6"/><circle cx="6.5" cy="13" r="3"/><circle cx="12.5" cy="7" r="3"/>' +
  '<circle cx="19.5" cy="7" r="3"/><circle cx="25.5" cy="13" r="3"/></g></svg>';

/**
 * How Swagger UI presents the REST contract at /docs (docs/explorers.md): titled for
 * this service, with its own icon, and without the top bar of Swagger UI's standalone layout
 * (the Fastify logo and an "Explore" box that loads any URL, prefilled with /docs/json): the
 * base layout shows the document's info, servers, Authorize and the operations only.
 * "Try it out" is on, no validator badge is fetched, and each request's duration is shown.
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
