import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { AppError } from '../errors/error-catalogue';
import type { ApiKeyService } from './api-key.service';

declare module 'fastify' {
  interface FastifyRequest {
    /** Id of the API key that authenticated this request (set by the auth hook). */
    apiKeyId?: number;
  }
}

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;
const REALM = 'Bearer realm="pet-store"';

function unauthenticated(message: string, error?: 'invalid_token'): AppError {
  const challenge = error ? `${REALM}, error="${error}"` : REALM;
  return new AppError('UNAUTHENTICATED', message, { 'WWW-Authenticate': challenge });
}

/**
 * The one authentication decision for both surfaces (spec "Authentication"): a Fastify
 * `onRequest` hook, run before the body is read, on every REST and GraphQL route.
 *
 * @param apiKeys - where keys are checked.
 * @returns a hook that sets `request.apiKeyId`, or throws AppError UNAUTHENTICATED
 *   (HTTP 401, `WWW-Authenticate: Bearer …` per RFC 6750) for a missing, malformed,
 *   unknown or revoked key. Each surface renders that error in its own shape.
 */
export function createAuthHook(apiKeys: ApiKeyService): onRequestAsyncHookHandler {
  return async function authenticate(request: FastifyRequest) {
    const header = request.headers.authorization;
    if (!header) throw unauthenticated('Missing API key: send Authorization: Bearer <API_KEY>.');
    const match = BEARER.exec(header);
    if (!match) throw unauthenticated('Malformed Authorization header: expected Bearer <API_KEY>.', 'invalid_token');
    const apiKey = await apiKeys.findActive(match[1]);
    if (!apiKey) throw unauthenticated('Invalid or revoked API key.', 'invalid_token');
    request.apiKeyId = apiKey.id;
  };
}
