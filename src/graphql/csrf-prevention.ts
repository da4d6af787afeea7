import type { CSRFPreventionOptions } from '@apollo/server';

/**
 * Apollo Server's CSRF prevention for `/graphql` (docs/security.md "CSRF"). Apollo runs an
 * operation sent without a `Content-Type`, or with one a plain HTML form can send
 * (`text/plain`, `application/x-www-form-urlencoded`, `multipart/form-data`), only when one of
 * these headers is present and not empty: headers a browser attaches only from a script, and
 * then cross-site only after a CORS preflight the server approved.
 *
 * `authorization` is in the list besides Apollo's two defaults (`x-apollo-operation-name`,
 * `apollo-require-preflight`, its `recommendedCsrfPreventionRequestHeaders`, not exported)
 * because every operation here needs `Authorization: Bearer <key>`, which the guard checks
 * before Apollo runs (401 otherwise): that header already proves what the defaults prove, and
 * clients that send it and nothing else (urql's and graphql-request's GETs) then work as they
 * are. A browser attaches an `Authorization` header by itself only for HTTP Basic or Digest
 * credentials it remembers, never a Bearer key, and the guard refuses those.
 */
export const CSRF_PREVENTION: Readonly<Required<CSRFPreventionOptions>> = Object.freeze({
  requestHeaders: ['authorization', 'x-apollo-operation-name', 'apollo-require-preflight'],
});
