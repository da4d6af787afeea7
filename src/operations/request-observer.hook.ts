import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Metrics, RequestLabels } from './metrics.registry';

declare module 'fastify' {
  interface FastifyRequest {
    /** The GraphQL operation this request ran, once Apollo has resolved it. */
    graphqlOperation?: GraphqlOperationSummary;
  }
}

/** What the logs and metrics say of a GraphQL operation. */
export interface GraphqlOperationSummary {
  /** The client's operation name, if it gave one (logs only: clients choose it freely). */
  name?: string;
  /** `query pets`, `mutation createPet`, `query pet,pets`: bounded by the schema, so fit for metric labels. */
  label: string;
}

/** A client's X-Request-Id is kept when it is 1-128 of these characters; anything else is replaced. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** Fastify's `genReqId`: the client's `X-Request-Id` when it is safe to log, else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
}

function labelsOf(request: FastifyRequest, status: number): RequestLabels {
  const route = request.routeOptions.url;
  const method = request.method;
  if (route === undefined) return { surface: 'other', route: 'unmatched', method, status };
  if (route.startsWith('/v1/pets')) return { surface: 'rest', route, method, status };
  if (route === '/graphql') return { surface: 'graphql', route: request.graphqlOperation?.label ?? route, method, status };
  return { surface: 'other', route, method, status };
}

/**
 * Fastify's request log lines, one per request (docs/operations.md "Logs"): nothing when a request
 * comes in, and when its response has been sent a line `request completed` with method,
 * route, status, durationMs, requestId, apiKeyId and, for GraphQL, the operation
 * (info; error for 5xx or a failed response).
 */
export class RequestLogController extends LogController {
  constructor() {
    super({ requestIdLogLabel: 'requestId' });
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? null,
      status: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 1000) / 1000,
      apiKeyId: request.guard?.apiKeyId ?? null,
      ...(request.graphqlOperation && { operation: request.graphqlOperation.label, operationName: request.graphqlOperation.name ?? null }),
    };
    if (error || reply.statusCode >= 500) reply.log.error({ ...line, ...(error && { err: error }) }, 'request completed');
    else reply.log.info(line, 'request completed');
  }
}

/**
 * Answers every request of `app` with `X-Request-Id` (the request id from
 * {@link requestIdOf}, also in its log lines) and records it in `metrics` once it is sent.
 */
export function observeRequests(app: FastifyInstance, metrics: Metrics): void {
  app.addHook('onSend', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    metrics.observeRequest(labelsOf(request, reply.statusCode), reply.elapsedTime / 1000);
  });
}
