/**
 * The OpenTelemetry switch (docs/operations.md "Tracing"). Tracing is on when `OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set and `OTEL_SDK_DISABLED` is not `true`; off, the SDK module is never
 * required, so nothing is patched and no span is made. On, it must start before fastify, mysql2, ioredis or pino is
 * first required, since its instrumentations patch them as they load: main.ts starts it before it loads the service.
 * This module requires none of them.
 */

/** The OTEL_* variables, as the configuration read them (docs/operations.md "Tracing"). */
export type TracingSettings = Readonly<Record<string, string | undefined>>;

/** The process's tracing, on or off. */
export interface Tracing {
  readonly enabled: boolean;
  /** Exports the spans still buffered, then stops; resolves within `TRACING_LIMITS.shutdownFlushMs` even when the collector is away. */
  shutdown(): Promise<void>;
}

/** Whether `settings` ask for traces: an OTLP endpoint is named and the SDK is not disabled (OpenTelemetry "Environment Variable Specification"). */
export function tracingWanted(settings: TracingSettings): boolean {
  if (settings.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return Boolean(settings.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/**
 * Starts tracing when `settings` ask for it (the SDK module is required only then), else returns the switch off.
 * @throws Error naming the OTEL_* variable whose value is not understood (a sampler, a protocol).
 */
export function startTracing(settings: TracingSettings): Tracing {
  if (!tracingWanted(settings)) return { enabled: false, shutdown: async () => undefined };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sdk = require('./tracing-sdk') as typeof import('./tracing-sdk');
  return sdk.startTracing(settings);
}
