import { randomUUID } from 'node:crypto';
import { context, propagation, trace } from '@opentelemetry/api';
import type { IncomingMessage } from 'node:http';
import { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify';
import type { Metrics, RequestLabels } from '../observability/metrics.registry';
import type { ServiceState } from '../observability/service-state';
import { contextOf } from './request-context';
import { SURFACE_PATHS } from '../surface-paths';

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** Fastify's `genReqId`: the client's `X-Request-Id` when it is safe to log, else a new UUID. */
export function requestIdOf(request: IncomingMessage): string {
  const sent = request.headers['x-request-id'];
  return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : randomUUID();
}

function labelsOf(request: FastifyRequest, status: number): RequestLabels {
  const route = request.routeOptions.url;
  const method = request.method;
  if (route === undefined) return { surface: 'other', method, status };
  if (route.startsWith(SURFACE_PATHS.pets) || route === SURFACE_PATHS.events) return { surface: 'rest', route, method, status };
  if (route === SURFACE_PATHS.graphql) {
    const operation = contextOf(request)?.graphqlOperation?.label;
    return { surface: 'graphql', route, ...(operation !== undefined && { graphqlOperation: operation }), method, status };
  }
  return { surface: 'other', route, method, status };
}

type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** The probes' paths: answered every few seconds per instance, so a healthy answer is not news. */
const PROBES: ReadonlySet<string> = new Set([SURFACE_PATHS.healthz, SURFACE_PATHS.readyz]);

/** One log line per request, once its response is sent, at the level its outcome deserves (docs/operations.md "Logs"). */
export class RequestLogController extends LogController {
  /** @param state - the shutdown's flag: a 503 from /readyz while draining is the drain working, not a fault. */
  constructor(private readonly state: ServiceState) {
    super({ requestIdLogLabel: 'requestId' });
  }

  private levelOf(error: Error | null | undefined, route: string | undefined, status: number): LogLevel {
    if (error) return 'error';
    if (route !== undefined && PROBES.has(route)) {
      if (status < 400) return 'debug';
      if (route === SURFACE_PATHS.readyz && status === 503) return this.state.draining ? 'info' : 'warn';
    }
    return status >= 500 ? 'error' : 'info';
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const context = contextOf(request);
    const operation = context?.graphqlOperation;
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? null,
      status: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 1000) / 1000,
      apiKeyId: context?.guard?.apiKeyId ?? null,
      ...(operation && { operation: operation.label, operationName: operation.name ?? null }),
    };
    reply.log[this.levelOf(error, request.routeOptions.url, reply.statusCode)]({ ...line, ...(error && { err: error }) }, 'request completed');
  }
}

/**
 * Answers every request with `X-Request-Id` and records it in `metrics` once it is sent. With tracing on (`traced`:
 * tracing.ts tracingWanted), every traced request is also answered with the W3C `traceparent` of its server span
 * (docs/operations.md "Tracing"); off, no hook looks for a span.
 */
export function observeRequests(app: FastifyInstance, metrics: Metrics, traced: boolean): void {
  if (traced) {
    app.addHook('onRequest', (_request, reply, done) => {
      // Fastify's instrumentation has made the server span active before any hook of the app runs.
      if (trace.getActiveSpan() !== undefined) {
        const carrier: Record<string, string> = {};
        propagation.inject(context.active(), carrier);
        if (carrier.traceparent) reply.header('traceparent', carrier.traceparent);
      }
      done();
    });
  }
  app.addHook('onSend', (request, reply, _payload, done) => {
    reply.header('X-Request-Id', request.id);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(labelsOf(request, reply.statusCode), reply.elapsedTime / 1000);
    done();
  });
}
