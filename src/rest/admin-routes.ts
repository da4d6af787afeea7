import type { FastifyInstance, FastifyReply, onRequestAsyncHookHandler } from 'fastify';
import type { AuditAction, AuditTrail } from '../audit/audit-trail';
import { AppError, type ErrorCode } from '../errors/error-catalogue';
import { auditActorOf } from '../guard/request.guard';
import { contextOf } from '../http/request-context';
import type { AdminPage } from '../validation/admin-page.inputs';
import { nextPageLink } from './next-page-link';
import { HEADERS, errorResponses } from './openapi.schemas';

/** The OpenAPI tag of every administration operation (docs/admin.md). */
export const ADMIN_TAG = 'admin';

/** The fields of every administration answer: the rate limit, the key's expiry. */
export const ADMIN_HEADERS = { ...HEADERS.RATE_LIMIT, ...HEADERS.API_KEY_EXPIRES };

/** A page's fields: `Link` rel="next" when more follow, and {@link ADMIN_HEADERS}. */
export const ADMIN_PAGE_HEADERS = {
  Link: {
    type: 'string',
    description: 'Only when more follow. RFC 8288: `<…?limit=20&after=…>; rel="next"`, the next page with the same `limit` and filters.',
  },
  ...ADMIN_HEADERS,
};

/** What an operation reading a JSON body can be refused with besides its own rules: unparsable, invalid, too large, not JSON. */
export const ADMIN_BODY_ERRORS: readonly ErrorCode[] = ['BAD_REQUEST', 'BAD_USER_INPUT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];

/** The route types of an operation on one resource, `…/{id}`: the id as the URL holds it (the service validates it). */
export type ById = { Params: { id: string } };

/**
 * Registers the administration operations `define` declares in a scope of their own, where `guard` (key, rate limit, the
 * operation's scope) runs on every request and input is validated once, by the service the handler calls (as the CLIs
 * call it): route schemas only document and serialise.
 */
export async function adminOperations(app: FastifyInstance, guard: onRequestAsyncHookHandler, define: (operations: FastifyInstance) => void): Promise<void> {
  await app.register(async (operations) => {
    operations.addHook('onRequest', guard);
    operations.setValidatorCompiler(() => () => true);
    define(operations);
  });
}

/** The error answers every administration operation can give, and `more` of its own (NOT_FOUND, BAD_USER_INPUT…). */
export function adminErrorResponses(more: ErrorCode[] = []) {
  return errorResponses([...more, 'UNAUTHENTICATED', 'FORBIDDEN', 'TOO_MANY_REQUESTS', 'INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE']);
}

/**
 * Answers an administration list's page (docs/admin.md "Paging"): its items as a JSON array and, when more follow,
 * `Link: <path?limit=…&…filters&after=…>; rel="next"` (RFC 8288).
 * @param filters - the query's other parameters the next page must keep, as sent.
 */
export function sendAdminPage<T>(reply: FastifyReply, path: string, page: AdminPage<T>, filters: Record<string, string | undefined> = {}): T[] {
  if (page.nextCursor !== undefined) reply.header('Link', nextPageLink(path, { limit: page.limit, ...filters, after: page.nextCursor }));
  return page.items;
}

/** The administration operations that change something, and the audit action each is recorded as (docs/admin.md "Audit trail"). */
export const AUDITED_OPERATIONS: Readonly<Record<string, AuditAction>> = Object.freeze({
  createApiKey: 'api_key.create',
  rollApiKey: 'api_key.roll',
  revokeApiKey: 'api_key.revoke',
  createWebhookEndpoint: 'webhook_endpoint.create',
  updateWebhookEndpoint: 'webhook_endpoint.update',
  rotateWebhookEndpointSecret: 'webhook_endpoint.rotate_secret',
  deleteWebhookEndpoint: 'webhook_endpoint.delete',
  createWebhookRedelivery: 'webhook_endpoint.redeliver',
  createWebhookRecovery: 'webhook_endpoint.recover',
});

/**
 * The administration API's onRequest guard: `guard` (key, rate limit, the operation's scope), and, when it refuses a
 * key it found (403: the scope is missing, or the origin), that refusal in the audit trail for the operations that
 * change something ({@link AUDITED_OPERATIONS}), as the operations record their own refusals. A request without a
 * valid key (401) is nobody's: it is not recorded.
 */
export function auditedGuard(guard: onRequestAsyncHookHandler, audit: AuditTrail): onRequestAsyncHookHandler {
  return async function guardAdministration(request, reply) {
    try {
      await guard.call(this, request, reply);
    } catch (error) {
      const action = AUDITED_OPERATIONS[request.routeOptions.schema?.operationId ?? ''];
      const found = contextOf(request)?.guard?.apiKeyId !== undefined;
      if (action !== undefined && found && error instanceof AppError && error.code === 'FORBIDDEN') {
        await audit.refused(auditActorOf(request), action, (request.params as { id?: string }).id, error);
      }
      throw error;
    }
  };
}
