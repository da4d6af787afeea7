import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { AppError } from '../errors/error-catalogue';
import { contextOf } from '../http/request-context';
import { type DocumentReference, type TrustedDocuments, resolveTrustedDocument, withoutPersistedQuery } from './trusted-documents';

/** Apollo's GET parameters that hold JSON (GraphQL over HTTP). */
function parsedJson(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // Apollo refuses it as it does today
  }
}

/** A GET's document reference, from the query string Apollo reads (`request.url`, not Fastify's `request.query`). */
function getReference(request: FastifyRequest): { params: URLSearchParams; reference: DocumentReference } {
  const [, search = ''] = request.url.split(/\?(.*)/s);
  const params = new URLSearchParams(search);
  return {
    params,
    reference: { query: params.get('query') ?? undefined, documentId: params.get('documentId') ?? undefined, extensions: parsedJson(params.get('extensions')) },
  };
}

/**
 * preHandler of `/graphql` (after the guard's onRequest, so the caller's key is known; before Apollo): applies the
 * trusted documents rule (trusted-documents.ts {@link resolveTrustedDocument}) to a POST body or a GET query string.
 * A trusted document replaces the id (`documentId` and `extensions.persistedQuery` are removed, so Apollo's automatic
 * persisted queries cache is neither read nor written); a refusal throws AppError PERSISTED_QUERY_ID_REQUIRED or
 * PERSISTED_QUERY_NOT_IN_LIST (400), which the route's errorHandler sends as a GraphQL error. Other bodies (not an
 * object) are left to Apollo, which refuses them.
 */
export function trustedDocumentsHook(trusted: TrustedDocuments): preHandlerAsyncHookHandler {
  return async function resolveTrustedDocuments(request) {
    const kind = contextOf(request)?.guard?.credential?.kind;
    if (kind === undefined) throw new Error(`${request.method} ${request.routeOptions.url} is not behind the guard`);
    if (request.method === 'GET') {
      const { params, reference } = getReference(request);
      const resolution = resolveTrustedDocument(reference, kind, trusted);
      if (resolution.action === 'refuse') throw new AppError(resolution.code);
      if (resolution.action === 'keep') return;
      params.set('query', resolution.query);
      params.delete('documentId');
      const extensions = withoutPersistedQuery(reference.extensions);
      if (extensions === undefined) params.delete('extensions');
      else params.set('extensions', JSON.stringify(extensions));
      // Apollo's Fastify integration reads the query string from the URL.
      request.raw.url = `${request.url.split('?')[0]}?${params}`;
      return;
    }
    const body = request.body;
    const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
    if (!isObject && kind === 'secret') return;
    const reference = isObject ? (body as Record<string, unknown>) : {};
    const resolution = resolveTrustedDocument(reference, kind, trusted);
    if (resolution.action === 'refuse') throw new AppError(resolution.code);
    if (resolution.action === 'keep') return;
    const { documentId: _id, extensions, ...rest } = reference;
    const remaining = withoutPersistedQuery(extensions);
    request.body = { ...rest, query: resolution.query, ...(remaining && { extensions: remaining }) };
  };
}
