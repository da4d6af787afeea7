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

/**
 * The token of an `Authorization` value, read as the HTTP guard reads it (RFC 6750 §2.1).
 * Also used for WebSocket `connection_init` payloads (docs/subscriptions.md).
 *
 * @param header - the value as sent, or anything else (then undefined).
 * @returns the bearer token, or undefined when the value is not `Bearer <token>`.
 */
export function bearerTokenOf(header: unknown): string | undefined {
  return typeof header === 'string' ? (BEARER.exec(header)?.[1] ?? undefined) : undefined;
}
const REALM = 'Bearer realm="pet-store"';

function unauthenticated(message: string, error?: 'invalid_token'): AppError {
  const challenge = error ? `${REALM}, error="${error}"` : REALM;
  return new AppError('UNAUTHENTICATED', message, { 'WWW-Authenticate': challenge });
}

/** Keys of requests that `identify` could not settle from the cache: `requireApiKey` looks them up. */
const toLookUp = new WeakMap<FastifyRequest, string>();

/**
 * The one authentication decision for both surfaces (spec "Authentication"), as two Fastify
 * `onRequest` hooks that run before the body is read, with the rate limiter between them, so
 * that every request is counted before its key can cost a database lookup (docs/security.md "Limits"):
 * - `identify` decides what it can without the database: it sets `request.apiKeyId` for a key
 *   found active (trusted, or known from the last hour and to be looked up again: counted
 *   against the key), or `request.authFailure` for a missing or malformed key or one found
 *   unknown or revoked moments ago; a key whose first lookup is under way waits for it; a key
 *   it has never seen is left to `requireApiKey`, and the request is counted against its
 *   address (then, once the key is found, against the key);
 * - `requireApiKey` looks up the keys `identify` left open (only for requests the limiter let
 *   through, so an address over its limit causes no lookup), then enforces: it throws the
 *   AppError UNAUTHENTICATED (HTTP 401, `WWW-Authenticate: Bearer …` per RFC 6750), which each
 *   surface renders in its own shape.
 *
 * @param apiKeys - where keys are checked.
 */
export function createAuthHooks(apiKeys: ApiKeyService): {
  identify: onRequestAsyncHookHandler;
  requireApiKey: onRequestAsyncHookHandler;
} {
  const invalid = () => unauthenticated('Invalid or revoked API key.', 'invalid_token');
  return {
    identify: async function identify(request: FastifyRequest) {
      const header = request.headers.authorization;
      if (!header) {
        request.authFailure = unauthenticated('Missing API key: send Authorization: Bearer <API_KEY>.');
        return;
      }
      const match = BEARER.exec(header);
      if (!match) {
        request.authFailure = unauthenticated('Malformed Authorization header: expected Bearer <API_KEY>.', 'invalid_token');
        return;
      }
      let recognised = apiKeys.recognise(match[1]);
      // The key's first lookup is under way (a burst after a start): wait for it, so that this
      // request is charged to the key once it is found, not to its address.
      const underWay = recognised.state === 'unknown' ? apiKeys.lookupUnderWay(match[1]) : undefined;
      if (underWay) {
        await underWay.catch(() => undefined);
        recognised = apiKeys.recognise(match[1]);
      }
      switch (recognised.state) {
        case 'trusted':
          request.apiKeyId = recognised.apiKey.id;
          return;
        case 'known':
          request.apiKeyId = recognised.apiKeyId;
          toLookUp.set(request, match[1]);
          return;
        case 'unknown':
          toLookUp.set(request, match[1]);
          return;
        default:
          request.authFailure = invalid();
      }
    },
    requireApiKey: async function requireApiKey(request: FastifyRequest) {
      const key = toLookUp.get(request);
      if (key !== undefined) {
        toLookUp.delete(request);
        const apiKey = await apiKeys.findActive(key);
        request.apiKeyId = apiKey?.id;
        if (!apiKey) request.authFailure = invalid();
      }
      if (request.authFailure) throw request.authFailure;
    },
  };
}
