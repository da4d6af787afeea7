import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { AppError } from '../errors/error-catalogue';
import type { ApiKeyService } from './api-key.service';

declare module 'fastify' {
  interface FastifyRequest {
    /** Id of the API key that authenticated this request (set by the auth hook). */
    apiKeyId?: number;
    /** Why the request is not authenticated (set by the auth hook when it is not). */
    authFailure?: AppError;
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
 * The one authentication decision for both surfaces (spec "Authentication"), as two Fastify
 * `onRequest` hooks that run before the body is read, with the rate limiter between them (so
 * that failed attempts are counted per IP address):
 * - `identify` decides: it sets `request.apiKeyId`, or `request.authFailure` for a missing,
 *   malformed, unknown or revoked key;
 * - `requireApiKey` enforces: it throws that AppError UNAUTHENTICATED (HTTP 401,
 *   `WWW-Authenticate: Bearer …` per RFC 6750), which each surface renders in its own shape.
 *
 * @param apiKeys - where keys are checked.
 */
export function createAuthHooks(apiKeys: ApiKeyService): {
  identify: onRequestAsyncHookHandler;
  requireApiKey: onRequestAsyncHookHandler;
} {
  return {
    identify: async function identify(request: FastifyRequest) {
      const header = request.headers.authorization;
      if (!header) {
        request.authFailure = unauthenticated('Missing API key: send Authorization: Bearer <API_KEY>.');
        return;
      }
      const match = BEARER.exec(header);
      const apiKey = match ? await apiKeys.findActive(match[1]) : null;
      if (apiKey) request.apiKeyId = apiKey.id;
      else if (!match) request.authFailure = unauthenticated('Malformed Authorization header: expected Bearer <API_KEY>.', 'invalid_token');
      else request.authFailure = unauthenticated('Invalid or revoked API key.', 'invalid_token');
    },
    requireApiKey: async function requireApiKey(request: FastifyRequest) {
      if (request.authFailure) throw request.authFailure;
    },
  };
}
