import type { FastifyPluginAsync, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { ApiKeyAdministration, KeyAdministrator } from '../auth/api-key-admin.service';
import { auditActorOf, guardStateOf } from '../guard/request.guard';
import { rejectOtherMethods } from '../http/method-not-allowed';
import {
  ADMIN_BODY_ERRORS,
  ADMIN_HEADERS,
  ADMIN_PAGE_HEADERS,
  ADMIN_TAG,
  adminErrorResponses,
  adminOperations,
  sendAdminPage,
  type ById,
} from './admin-routes';
import { API_KEY_EXAMPLES, API_KEY_ID_PARAMS, LIST_API_KEYS_QUERY, jsonResponse, operationSecurity } from './openapi.schemas';
import { queryInput } from './query-input';

export interface ApiKeyControllerOptions {
  keys: ApiKeyAdministration;
  /** The onRequest hook guarding every operation (guard/request.guard.ts): key, rate limit, the operation's scope. */
  guard: onRequestAsyncHookHandler;
}

/** The caller of a guarded request as a key administrator: its key for the audit trail, and the scopes it may grant. */
function administratorOf(request: FastifyRequest): KeyAdministrator {
  return { actor: auditActorOf(request), grants: guardStateOf(request).credential!.scopes };
}

const LOCATION = { Location: { type: 'string', description: 'Path of the new key, /v1/admin/api-keys/{id}.' } };

/**
 * The administration of API keys at `/v1/admin/api-keys` (docs/admin.md "API keys"), every operation needing
 * `keys:admin`. Handlers only translate: ApiKeyAdministration validates, applies the rules and records the audit trail,
 * as it does for the `apikey` CLI.
 */
export const apiKeyController: FastifyPluginAsync<ApiKeyControllerOptions> = async (app, { keys, guard }) => {
  const location = (id: number) => `${app.prefix}/api-keys/${id}`;
  await adminOperations(app, guard, (operations) => {
    operations.post(
      '/api-keys',
      {
        schema: {
          operationId: 'createApiKey',
          security: operationSecurity('createApiKey'),
          summary: 'Create an API key',
          description:
            'As `apikey create`. The answer holds the key, shown this once: only its hash is stored. A key grants only scopes it holds: ' +
            'asking for one the calling key lacks (the kind’s default scopes included) is 403 FORBIDDEN. Needs `keys:admin`.',
          tags: [ADMIN_TAG],
          body: { $ref: 'NewApiKey#' },
          response: {
            201: jsonResponse('The new key, with its text.', 'CreatedApiKey#', { example: API_KEY_EXAMPLES.createdApiKey }, { ...LOCATION, ...ADMIN_HEADERS }),
            ...adminErrorResponses([...ADMIN_BODY_ERRORS]),
          },
        },
      },
      async (request, reply) => {
        const created = await keys.create(administratorOf(request), request.body);
        return reply.code(201).header('Location', location(created.id)).send(created);
      },
    );
    operations.get(
      '/api-keys',
      {
        schema: {
          operationId: 'listApiKeys',
          security: operationSecurity('listApiKeys'),
          summary: 'List API keys, revoked ones included, by ascending id',
          description: 'The fields of `apikey list --json`; never a key’s text. Paged by `limit` and `after` (`Link` rel="next"). Needs `keys:admin`.',
          tags: [ADMIN_TAG],
          querystring: LIST_API_KEYS_QUERY,
          response: {
            200: jsonResponse('A JSON array of ApiKey, by ascending id.', 'ApiKeys#', { example: [API_KEY_EXAMPLES.apiKey] }, ADMIN_PAGE_HEADERS),
            ...adminErrorResponses(['BAD_USER_INPUT']),
          },
        },
      },
      async (request, reply) => sendAdminPage(reply, `${app.prefix}/api-keys`, await keys.list(queryInput(request.query))),
    );
    operations.get<ById>(
      '/api-keys/:id',
      {
        schema: {
          operationId: 'getApiKey',
          security: operationSecurity('getApiKey'),
          summary: 'Get an API key',
          description: 'Revoked or not; never its text. Needs `keys:admin`.',
          tags: [ADMIN_TAG],
          params: API_KEY_ID_PARAMS,
          response: {
            200: jsonResponse('The key.', 'ApiKey#', { example: API_KEY_EXAMPLES.apiKey }, ADMIN_HEADERS),
            ...adminErrorResponses(['BAD_USER_INPUT', 'NOT_FOUND']),
          },
        },
      },
      async (request) => keys.get(request.params.id),
    );
    operations.post<ById>(
      '/api-keys/:id/roll',
      {
        schema: {
          operationId: 'rollApiKey',
          security: operationSecurity('rollApiKey'),
          summary: 'Roll an API key',
          description:
            'As `apikey roll`: a new key with the same kind, scopes, origins, rate limit (sharing its budget) and lifetime; the rolled key keeps working ' +
            '`overlap` seconds (default a day), or until its earlier expiry. The answer holds the new key, shown this once. 404 when no active key has the ' +
            'id; 403 FORBIDDEN when the key holds a scope the calling key lacks. Send `{}` for the defaults. Needs `keys:admin`.',
          tags: [ADMIN_TAG],
          params: API_KEY_ID_PARAMS,
          body: { $ref: 'RollApiKey#' },
          response: {
            201: jsonResponse('The new key, with its text.', 'CreatedApiKey#', { example: API_KEY_EXAMPLES.createdApiKey }, { ...LOCATION, ...ADMIN_HEADERS }),
            ...adminErrorResponses([...ADMIN_BODY_ERRORS, 'NOT_FOUND']),
          },
        },
      },
      async (request, reply) => {
        const { created } = await keys.roll(administratorOf(request), request.params.id, request.body);
        return reply.code(201).header('Location', location(created.id)).send(created);
      },
    );
    operations.post<ById>(
      '/api-keys/:id/revoke',
      {
        schema: {
          operationId: 'revokeApiKey',
          security: operationSecurity('revokeApiKey'),
          summary: 'Revoke an API key',
          description:
            'As `apikey revoke`: at once on every instance (with Redis; otherwise within API_KEY_CACHE_SECONDS). The key stays listed, with `revokedAt`. ' +
            '404 when no active key has the id. No body. Needs `keys:admin`.',
          tags: [ADMIN_TAG],
          params: API_KEY_ID_PARAMS,
          response: {
            200: jsonResponse('The revoked key.', 'ApiKey#', { example: { ...API_KEY_EXAMPLES.apiKey, revokedAt: '2026-11-28T10:00:00.000Z' } }, ADMIN_HEADERS),
            // A body is not read, but parsed when sent, as on every route.
            ...adminErrorResponses([...ADMIN_BODY_ERRORS, 'NOT_FOUND']),
          },
        },
      },
      async (request) => keys.revoke(administratorOf(request), request.params.id),
    );
  });
  rejectOtherMethods(app, '/api-keys', ['GET', 'HEAD', 'POST']);
  rejectOtherMethods(app, '/api-keys/:id', ['GET', 'HEAD']);
  rejectOtherMethods(app, '/api-keys/:id/roll', ['POST']);
  rejectOtherMethods(app, '/api-keys/:id/revoke', ['POST']);
};
