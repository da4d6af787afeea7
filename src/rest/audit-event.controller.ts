import type { FastifyPluginAsync, onRequestAsyncHookHandler } from 'fastify';
import type { AuditTrail } from '../audit/audit-trail';
import { rejectOtherMethods } from '../http/method-not-allowed';
import { ADMIN_PAGE_HEADERS, ADMIN_TAG, adminErrorResponses, adminOperations, sendAdminPage } from './admin-routes';
import { LIST_AUDIT_EVENTS_QUERY, OPENAPI_EXAMPLES, jsonResponse, operationSecurity } from './openapi.schemas';
import { queryInput } from './query-input';

export interface AuditEventControllerOptions {
  audit: AuditTrail;
  /** The onRequest hook guarding every operation (guard/request.guard.ts): key, rate limit, the operation's scope. */
  guard: onRequestAsyncHookHandler;
}

/** `GET /v1/admin/audit-events` (docs/admin.md "Audit trail"): every administration action, newest first. */
export const auditEventController: FastifyPluginAsync<AuditEventControllerOptions> = async (app, { audit, guard }) => {
  await adminOperations(app, guard, (operations) => {
    operations.get(
      '/audit-events',
      {
        schema: {
          operationId: 'listAuditEvents',
          security: operationSecurity('listAuditEvents'),
          summary: 'The audit trail: every administration action, newest first',
          description:
            'Each key and webhook endpoint change, through this API or the CLI, done or refused: who (the key, or `cli`), what, on what, when, ' +
            'the request id and the address, and the outcome (`success` or the error code). Never a secret. Needs `keys:admin`.',
          tags: [ADMIN_TAG],
          querystring: LIST_AUDIT_EVENTS_QUERY,
          response: {
            200: jsonResponse('A JSON array of AuditEvent, newest first.', 'AuditEvents#', { example: [OPENAPI_EXAMPLES.auditEvent] }, ADMIN_PAGE_HEADERS),
            ...adminErrorResponses(['BAD_USER_INPUT']),
          },
        },
      },
      async (request, reply) => sendAdminPage(reply, `${app.prefix}/audit-events`, await audit.list(queryInput(request.query))),
    );
  });
  rejectOtherMethods(app, '/audit-events', ['GET', 'HEAD']);
};
