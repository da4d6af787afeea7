import type { FastifyPluginAsync, onRequestAsyncHookHandler } from 'fastify';
import { RevokeCredentialsInput } from '../auth/api-key.inputs';
import type { ApiKeyService } from '../auth/api-key.service';
import { rejectOtherMethods } from '../http/method-not-allowed';
import { API_KEY_LIMITS } from '../limits';
import { HEADERS, errorResponses, inputSchema } from './openapi.schemas';

export interface CredentialsControllerOptions {
  apiKeys: ApiKeyService;
  /** The onRequest hook charging the request's address (guard/request.guard.ts `addressHook`): no key is asked for. */
  chargeAddress: onRequestAsyncHookHandler;
}

/** The one answer of the revocation API: the same for valid, unknown and malformed keys, so it tells nothing of them. */
export const REVOKE_CREDENTIALS_ANSWER = Object.freeze({ message: 'Any active API key among these credentials is now revoked.' });

/** What Swagger UI pre-fills: a key of the right shape that no database holds. */
const REVOKE_CREDENTIALS_EXAMPLE = Object.freeze({ credentials: ['pst_sk_' + 'A'.repeat(43) + 'xxxxxx'] });

/**
 * The credential revocation API at `/v1/credentials/revoke` (docs/api-keys.md "Revocation"), as GitHub's: anyone who
 * finds a leaked key revokes it, without a key of their own. Outside the pet operations' guard; each request is charged
 * to its address. ApiKeyService validates the body, revokes and announces the revocation to other instances.
 */
export const credentialsController: FastifyPluginAsync<CredentialsControllerOptions> = async (app, { apiKeys, chargeAddress }) => {
  // Input is validated once, by ApiKeyService's rules; route schemas only document and serialise.
  app.setValidatorCompiler(() => () => true);
  app.post(
    '/credentials/revoke',
    {
      onRequest: chargeAddress,
      schema: {
        operationId: 'revokeCredentials',
        summary: 'Revoke leaked API keys',
        description:
          `No API key needed. Revokes whichever of 1 to ${API_KEY_LIMITS.maxRevokedPerRequest} keys are active, at once on every instance. ` +
          'The answer is 202 with the same body for valid, unknown and malformed keys. Rate-limited per client address.',
        tags: ['credentials'],
        security: [],
        body: { ...inputSchema(RevokeCredentialsInput), examples: [REVOKE_CREDENTIALS_EXAMPLE] },
        response: {
          202: {
            description: 'Any active key among the credentials is revoked; the answer is the same whatever they were.',
            headers: HEADERS.RATE_LIMIT,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: { message: { type: 'string', description: 'Always the same.' } },
                  required: ['message'],
                  additionalProperties: false,
                },
                example: REVOKE_CREDENTIALS_ANSWER,
              },
            },
          },
          // Charged before the body is read, so these carry the address's rate limit.
          ...errorResponses(['BAD_REQUEST', 'BAD_USER_INPUT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'], HEADERS.RATE_LIMIT),
          ...errorResponses(['TOO_MANY_REQUESTS', 'INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE']),
        },
      },
    },
    async (request, reply) => {
      await apiKeys.revokeCredentials(request.body);
      return reply.code(202).send(REVOKE_CREDENTIALS_ANSWER);
    },
  );
  rejectOtherMethods(app, '/credentials/revoke', ['POST']);
};
