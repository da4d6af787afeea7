import type { FastifyPluginAsync, onRequestAsyncHookHandler } from 'fastify';
import { auditActorOf } from '../guard/request.guard';
import { rejectOtherMethods } from '../http/method-not-allowed';
import type { WebhookDeliveryService } from '../webhooks/webhook-delivery.service';
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
import {
  LIST_WEBHOOK_ATTEMPTS_QUERY,
  WEBHOOK_DELIVERY_EXAMPLES,
  WEBHOOK_ENDPOINT_ID_PARAMS,
  WEBHOOK_RECOVERY_PATH,
  jsonResponse,
  operationSecurity,
} from './openapi.schemas';
import { queryInput } from './query-input';
import { WEBHOOK_LIMITS } from '../limits';

export interface WebhookDeliveryControllerOptions {
  deliveries: WebhookDeliveryService;
  /** The onRequest hook guarding every operation (guard/request.guard.ts): key, rate limit, the operation's scope. */
  guard: onRequestAsyncHookHandler;
}

const ATTEMPTS = '/webhook-endpoints/:id/attempts';
const REDELIVERIES = '/webhook-endpoints/:id/redeliveries';
const RECOVERIES = '/webhook-endpoints/:id/recoveries';
const RECOVERY = '/webhook-endpoints/:id/recoveries/:recoveryId';

/**
 * An endpoint's deliveries over REST (docs/admin.md "Delivery attempts", "Redelivery", "Recovery"), scope
 * `webhooks:admin`: its attempts newest first, and redeliveries and recoveries queued for the dispatcher (202).
 */
export const webhookDeliveryController: FastifyPluginAsync<WebhookDeliveryControllerOptions> = async (app, { deliveries, guard }) => {
  await adminOperations(app, guard, (operations) => {
    operations.get<ById>(
      ATTEMPTS,
      {
        schema: {
          operationId: 'listWebhookAttempts',
          security: operationSecurity('listWebhookAttempts'),
          summary: "An endpoint's delivery attempts, newest first",
          description:
            "Every POST of an event to the endpoint: by the feed's own stream, a redelivery or a recovery; when, how long, the status or " +
            `why there was none, and the first ${WEBHOOK_LIMITS.attemptBodyBytes} bytes of the answer. \`eventId\` keeps one event's. ` +
            `Kept ${WEBHOOK_LIMITS.attemptRetentionMs / 86_400_000} days, ${WEBHOOK_LIMITS.attemptsPerEndpoint.toLocaleString('en-US')} per endpoint. Needs \`webhooks:admin\`.`,
          tags: [ADMIN_TAG],
          params: WEBHOOK_ENDPOINT_ID_PARAMS,
          querystring: LIST_WEBHOOK_ATTEMPTS_QUERY,
          response: {
            200: jsonResponse(
              'A JSON array of WebhookAttempt, newest first.',
              'WebhookAttempts#',
              { example: [WEBHOOK_DELIVERY_EXAMPLES.attempt, WEBHOOK_DELIVERY_EXAMPLES.timedOut] },
              ADMIN_PAGE_HEADERS,
            ),
            ...adminErrorResponses(['BAD_USER_INPUT', 'NOT_FOUND']),
          },
        },
      },
      async (request, reply) => {
        const query = queryInput(request.query);
        const page = await deliveries.listAttempts(request.params, query);
        return sendAdminPage(reply, `${app.prefix}/webhook-endpoints/${request.params.id}/attempts`, page, { eventId: query.eventId as string | undefined });
      },
    );
    operations.post<ById>(
      REDELIVERIES,
      {
        schema: {
          operationId: 'createWebhookRedelivery',
          security: operationSecurity('createWebhookRedelivery'),
          summary: 'Send one event to an endpoint again',
          description:
            "Queues one more attempt of the event, with the same `webhook-id`, signed with the endpoint's current secrets, made by the instance " +
            "delivering to the endpoint (after a restart too). Its outcome is an attempt with trigger `redelivery`; the endpoint's cursor does not move. " +
            'Needs `webhooks:admin`.',
          tags: [ADMIN_TAG],
          params: WEBHOOK_ENDPOINT_ID_PARAMS,
          body: { $ref: 'NewWebhookRedelivery#' },
          response: {
            202: jsonResponse('Queued.', 'WebhookRedelivery#', { example: WEBHOOK_DELIVERY_EXAMPLES.redelivery }, ADMIN_HEADERS),
            ...adminErrorResponses([...ADMIN_BODY_ERRORS, 'NOT_FOUND']),
          },
        },
      },
      async (request, reply) => reply.code(202).send(await deliveries.redeliver(auditActorOf(request), request.params, request.body)),
    );
    operations.post<ById>(
      RECOVERIES,
      {
        schema: {
          operationId: 'createWebhookRecovery',
          security: operationSecurity('createWebhookRecovery'),
          summary: 'Resend the events whose last attempt failed',
          description:
            "Queues a recovery: every event up to the feed's head now whose last attempt failed, at or after `since` or after the event `after`, " +
            'resent once each, in feed order, by the instance delivering to the endpoint; it resumes after a restart. `Location` is its progress. ' +
            'Needs `webhooks:admin`.',
          tags: [ADMIN_TAG],
          params: WEBHOOK_ENDPOINT_ID_PARAMS,
          body: { $ref: 'NewWebhookRecovery#' },
          response: {
            202: jsonResponse(
              'Queued; `Location` is its progress.',
              'WebhookRecovery#',
              { example: { ...WEBHOOK_DELIVERY_EXAMPLES.recovery, state: 'queued', events: 0, sent: 0, failed: 0, startedAt: null } },
              { Location: { type: 'string', description: 'Its progress: /v1/admin/webhook-endpoints/{id}/recoveries/{recoveryId}.' }, ...ADMIN_HEADERS },
            ),
            ...adminErrorResponses([...ADMIN_BODY_ERRORS, 'NOT_FOUND']),
          },
        },
      },
      async (request, reply) => {
        const recovery = await deliveries.recover(auditActorOf(request), request.params, request.body);
        return reply.code(202).header('Location', `${app.prefix}/webhook-endpoints/${recovery.endpointId}/recoveries/${recovery.id}`).send(recovery);
      },
    );
    operations.get(
      RECOVERY,
      {
        schema: {
          operationId: 'getWebhookRecovery',
          security: operationSecurity('getWebhookRecovery'),
          summary: 'A recovery and how far it has got',
          description: 'Its state (`queued`, `running`, `done`, `failed`) and counts: events to resend, sent, failed. Needs `webhooks:admin`.',
          tags: [ADMIN_TAG],
          params: WEBHOOK_RECOVERY_PATH,
          response: {
            200: jsonResponse('The recovery.', 'WebhookRecovery#', { example: WEBHOOK_DELIVERY_EXAMPLES.recovery }, ADMIN_HEADERS),
            ...adminErrorResponses(['BAD_USER_INPUT', 'NOT_FOUND']),
          },
        },
      },
      async (request) => deliveries.getRecovery(request.params),
    );
  });
  rejectOtherMethods(app, ATTEMPTS, ['GET', 'HEAD']);
  rejectOtherMethods(app, REDELIVERIES, ['POST']);
  rejectOtherMethods(app, RECOVERIES, ['POST']);
  rejectOtherMethods(app, RECOVERY, ['GET', 'HEAD']);
};
