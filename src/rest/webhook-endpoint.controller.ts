import type { FastifyPluginAsync, onRequestAsyncHookHandler } from 'fastify';
import { auditActorOf } from '../guard/request.guard';
import { rejectOtherMethods } from '../http/method-not-allowed';
import type { WebhookEndpointService } from '../webhooks/webhook-endpoint.service';
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
  LIST_WEBHOOK_ENDPOINTS_QUERY,
  WEBHOOK_ENDPOINT_ID_PARAMS,
  WEBHOOK_OPENAPI_EXAMPLES as EXAMPLES,
  jsonResponse,
  operationSecurity,
} from './openapi.schemas';
import { queryInput } from './query-input';
import { WEBHOOK_LIMITS } from '../limits';

export interface WebhookEndpointControllerOptions {
  webhookEndpoints: WebhookEndpointService;
  /** The onRequest hook guarding every operation (guard/request.guard.ts): key, rate limit, the operation's scope. */
  guard: onRequestAsyncHookHandler;
}

const LOCATION = { Location: { type: 'string', description: 'Path of the created endpoint, /v1/admin/webhook-endpoints/{id}.' } };

/**
 * `/v1/admin/webhook-endpoints` (docs/admin.md "Webhook endpoints"), needing `webhooks:admin`: handlers only translate;
 * WebhookEndpointService validates, changes, audits, and is what the `webhook` CLI calls too.
 */
export const webhookEndpointController: FastifyPluginAsync<WebhookEndpointControllerOptions> = async (app, { webhookEndpoints, guard }) => {
  await adminOperations(app, guard, (operations) => {
    operations.post(
      '/webhook-endpoints',
      {
        schema: {
          operationId: 'createWebhookEndpoint',
          security: operationSecurity('createWebhookEndpoint'),
          summary: 'Add a webhook endpoint',
          description:
            'Stores an enabled endpoint that receives the events created from now on, and answers its signing secret, shown this once. ' +
            'The URL must pass the target rules (docs/webhooks.md "Where deliveries may go"): a refused one is 400 with the reason, and nothing is stored.',
          tags: [ADMIN_TAG],
          body: { $ref: 'NewWebhookEndpoint#' },
          response: {
            201: jsonResponse(
              'The endpoint, and its secret.',
              'CreatedWebhookEndpoint#',
              { example: EXAMPLES.createdWebhookEndpoint },
              { ...LOCATION, ...ADMIN_HEADERS },
            ),
            ...adminErrorResponses([...ADMIN_BODY_ERRORS]),
          },
        },
      },
      async (request, reply) => {
        const created = await webhookEndpoints.create(request.body, auditActorOf(request));
        return reply.code(201).header('Location', `${app.prefix}/webhook-endpoints/${created.id}`).send(created);
      },
    );

    operations.get(
      '/webhook-endpoints',
      {
        schema: {
          operationId: 'listWebhookEndpoints',
          security: operationSecurity('listWebhookEndpoints'),
          summary: 'List webhook endpoints, with their health',
          description: 'Ascending id order, a page at a time (`Link` rel="next" when more follow). Never a secret.',
          tags: [ADMIN_TAG],
          querystring: LIST_WEBHOOK_ENDPOINTS_QUERY,
          response: {
            200: jsonResponse('A JSON array of WebhookEndpoint.', 'WebhookEndpoints#', { example: EXAMPLES.webhookEndpoints }, ADMIN_PAGE_HEADERS),
            ...adminErrorResponses(['BAD_USER_INPUT']),
          },
        },
      },
      async (request, reply) => sendAdminPage(reply, `${app.prefix}/webhook-endpoints`, await webhookEndpoints.list(queryInput(request.query))),
    );

    operations.get<ById>(
      '/webhook-endpoints/:id',
      {
        schema: {
          operationId: 'getWebhookEndpoint',
          security: operationSecurity('getWebhookEndpoint'),
          summary: 'Return one webhook endpoint, with its health',
          tags: [ADMIN_TAG],
          params: WEBHOOK_ENDPOINT_ID_PARAMS,
          response: {
            200: jsonResponse('The WebhookEndpoint.', 'WebhookEndpoint#', { example: EXAMPLES.webhookEndpoint }, ADMIN_HEADERS),
            ...adminErrorResponses(['BAD_USER_INPUT', 'NOT_FOUND']),
          },
        },
      },
      async (request) => webhookEndpoints.get(request.params.id),
    );

    operations.patch<ById>(
      '/webhook-endpoints/:id',
      {
        schema: {
          operationId: 'updateWebhookEndpoint',
          security: operationSecurity('updateWebhookEndpoint'),
          summary: 'Change a webhook endpoint: its URL, filter, description, or whether it is enabled',
          description:
            'An `application/json` body read as a JSON Merge Patch (RFC 7396): absent fields are unchanged, null clears `status` and `description`. ' +
            'A new URL is checked as on create (400 with the reason, nothing changed). `enabled: true` resumes a disabled endpoint from its cursor; ' +
            '`enabled: false` disables it.',
          tags: [ADMIN_TAG],
          params: WEBHOOK_ENDPOINT_ID_PARAMS,
          body: { $ref: 'WebhookEndpointUpdate#' },
          response: {
            200: jsonResponse('The WebhookEndpoint after the change.', 'WebhookEndpoint#', { example: EXAMPLES.webhookEndpoint }, ADMIN_HEADERS),
            ...adminErrorResponses([...ADMIN_BODY_ERRORS, 'NOT_FOUND']),
          },
        },
      },
      async (request) => webhookEndpoints.update(request.params.id, request.body, auditActorOf(request)),
    );

    operations.post<ById>(
      '/webhook-endpoints/:id/rotate-secret',
      {
        schema: {
          operationId: 'rotateWebhookEndpointSecret',
          security: operationSecurity('rotateWebhookEndpointSecret'),
          summary: 'Give a webhook endpoint a new signing secret; the old ones keep signing during the overlap',
          description:
            'The new secret signs every delivery from now on and is shown this once; the secrets the endpoint had sign too until `previousSecretsUntil` ' +
            `(the overlap, ${WEBHOOK_LIMITS.defaultRotateOverlapMs / 3_600_000} h by default, \`{}\`), so receivers switch without a gap.`,
          tags: [ADMIN_TAG],
          params: WEBHOOK_ENDPOINT_ID_PARAMS,
          body: { $ref: 'WebhookSecretRotation#' },
          response: {
            200: jsonResponse('The new secret.', 'RotatedWebhookSecret#', { example: EXAMPLES.rotatedWebhookSecret }, ADMIN_HEADERS),
            ...adminErrorResponses([...ADMIN_BODY_ERRORS, 'NOT_FOUND']),
          },
        },
      },
      async (request) => webhookEndpoints.rotateSecret(request.params.id, request.body, auditActorOf(request)),
    );

    operations.delete<ById>(
      '/webhook-endpoints/:id',
      {
        schema: {
          operationId: 'deleteWebhookEndpoint',
          security: operationSecurity('deleteWebhookEndpoint'),
          summary: 'Delete a webhook endpoint: no more deliveries to it',
          tags: [ADMIN_TAG],
          params: WEBHOOK_ENDPOINT_ID_PARAMS,
          response: {
            // @fastify/swagger's mark of a response with no content.
            204: { type: 'null', description: 'Deleted.', headers: ADMIN_HEADERS },
            ...adminErrorResponses(['BAD_USER_INPUT', 'NOT_FOUND']),
          },
        },
      },
      async (request, reply) => {
        await webhookEndpoints.delete(request.params.id, auditActorOf(request));
        return reply.code(204).send();
      },
    );
  });
  rejectOtherMethods(app, '/webhook-endpoints', ['GET', 'HEAD', 'POST']);
  rejectOtherMethods(app, '/webhook-endpoints/:id', ['GET', 'HEAD', 'PATCH', 'DELETE']);
  rejectOtherMethods(app, '/webhook-endpoints/:id/rotate-secret', ['POST']);
};
