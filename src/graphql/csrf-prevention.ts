import type { CSRFPreventionOptions } from '@apollo/server';

/**
 * Apollo's CSRF prevention (docs/security.md "CSRF"), plus `authorization` beside its two
 * defaults: every operation needs a Bearer key, which a browser never attaches by itself (only
 * Basic or Digest, which the guard refuses), so clients sending only that (urql, graphql-request) work.
 */
export const CSRF_PREVENTION: Readonly<Required<CSRFPreventionOptions>> = Object.freeze({
  requestHeaders: ['authorization', 'x-apollo-operation-name', 'apollo-require-preflight'],
});
