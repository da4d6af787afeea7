import { type Attributes, type Context, type Link, SpanKind, trace } from '@opentelemetry/api';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { MySQL2Instrumentation } from '@opentelemetry/instrumentation-mysql2';
import { PinoInstrumentation } from '@opentelemetry/instrumentation-pino';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  type Sampler,
  type SamplingResult,
  SamplingDecision,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { TRACING_LIMITS } from '../limits';
import { SURFACE_PATHS } from '../surface-paths';

/** The OTEL_* variables as the configuration read them (tracing.ts's TracingSettings). */
type TracingSettings = Readonly<Record<string, string | undefined>>;

/** What the service calls itself unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise. */
const SERVICE_NAME = 'pet-store-gateway';

/** Probes and scrapes come every few seconds and tell nothing about a request: no spans. */
const UNTRACED_ROUTES = new Set<string | undefined>([SURFACE_PATHS.healthz, SURFACE_PATHS.readyz, '/metrics']);

/**
 * OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG as the OpenTelemetry environment specification reads them
 * (`parentbased_always_on` when unset).
 * @throws Error naming the variable when its value is not one of the specification's samplers or ratio.
 */
export function samplerOf(env: TracingSettings): Sampler {
  const name = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() || 'parentbased_always_on';
  const ratio = (): number => {
    const text = env.OTEL_TRACES_SAMPLER_ARG?.trim();
    if (!text) return 1;
    const value = Number(text);
    if (!Number.isFinite(value) || value < 0 || value > 1) throw new Error(`OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1, not ${text}`);
    return value;
  };
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio());
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio()) });
    default:
      throw new Error(
        `OTEL_TRACES_SAMPLER: must be always_on, always_off, traceidratio or parentbased_always_on, parentbased_always_off, parentbased_traceidratio, not ${name}`,
      );
  }
}

/**
 * Keeps statements out of traces unless a request (or a subscription's event) made them: the change feed's ticks and the
 * lag checks run SQL every 100 ms to 1 s, and would each be a trace of one span. A statement is a CLIENT span whose
 * attributes at its start name a database system (`db.system.name`, or `db.system` in the older semantic conventions), as
 * the mysql2 and ioredis instrumentations set them; other root CLIENT spans (a webhook attempt) and everything else are
 * `inner`'s to decide.
 */
export class RequestStatementsSampler implements Sampler {
  constructor(private readonly inner: Sampler) {}

  shouldSample(context: Context, traceId: string, name: string, kind: SpanKind, attributes: Attributes, links: Link[]): SamplingResult {
    const statement = kind === SpanKind.CLIENT && (attributes['db.system.name'] !== undefined || attributes['db.system'] !== undefined);
    if (statement && trace.getSpanContext(context) === undefined) return { decision: SamplingDecision.NOT_RECORD };
    return this.inner.shouldSample(context, traceId, name, kind, attributes, links);
  }

  toString(): string {
    return `RequestStatementsSampler{${this.inner.toString()}}`;
  }
}

/**
 * OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL: `http/protobuf` (the default) or `http/json`; the
 * exporter reads its endpoint, headers and timeout from the standard variables itself.
 * @throws Error for `grpc` or any other value: this service exports over HTTP only.
 */
function exporterOf(env: TracingSettings): OtlpProtobufExporter | OtlpJsonExporter {
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[variable]?.trim() || 'http/protobuf';
  if (protocol === 'http/protobuf') return new OtlpProtobufExporter();
  if (protocol === 'http/json') return new OtlpJsonExporter();
  throw new Error(`${variable}: must be http/protobuf or http/json (OTLP over HTTP), not ${protocol}`);
}

/**
 * Starts the tracer provider (W3C trace context, batch export over OTLP/HTTP) and the instrumentations of Fastify (one
 * SERVER span per request, named `GET /v1/pets` after its route, HTTP semantic conventions), mysql2 (a span per
 * statement, values masked), ioredis (a span per command made within a trace) and pino (`trace_id`, `span_id` on every
 * line logged within a span). Call it before fastify, mysql2, ioredis or pino is required.
 * @throws Error naming the OTEL_* variable whose value is not understood.
 */
export function startTracing(env: TracingSettings): { enabled: true; shutdown: () => Promise<void> } {
  const provider = new NodeTracerProvider({
    resource: defaultResource()
      .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: SERVICE_NAME }))
      .merge(detectResources({ detectors: [envDetector] })),
    sampler: new RequestStatementsSampler(samplerOf(env)),
    // Reads OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_QUEUE_SIZE and the rest itself.
    spanProcessors: [new BatchSpanProcessor(exporterOf(env))],
  });
  // The default propagator is W3C trace context and baggage.
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        // A span per hook would outnumber the statements; the handler's span keeps a POST's body-parsing gap out of its context.
        instrumentHooks: false,
        instrumentHandler: true,
        ignorePaths: ({ url }) => UNTRACED_ROUTES.has(url),
        // HTTP semantic conventions: `{method} {route}`, or `{method}` alone when no route matched.
        requestHook: (span, request) => span.updateName(request.routeOptions.url ? `${request.method} ${request.routeOptions.url}` : request.method),
      }),
      // Values masked: slow-statement lines never carry them either (pet names, key hashes).
      new MySQL2Instrumentation({ maskStatement: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      new PinoInstrumentation({ disableLogSending: true }),
    ],
  });
  const shutdown = async () => {
    let timer: NodeJS.Timeout | undefined;
    const givenUp = new Promise<void>((resolve) => (timer = setTimeout(resolve, TRACING_LIMITS.shutdownFlushMs)));
    try {
      await Promise.race([provider.shutdown().catch(() => undefined), givenUp]);
    } finally {
      clearTimeout(timer);
    }
  };
  return { enabled: true, shutdown };
}
