/**
 * The OpenTelemetry switch (docs/operations.md "Tracing"): main.ts imports this module before anything else, because
 * instrumentations patch fastify's, mysql2's, ioredis's and pino's modules as they are first required. Tracing is on when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set and `OTEL_SDK_DISABLED` is not `true`;
 * off, the SDK module is never required, so nothing is patched and no span is made.
 */

/** The process's tracing, on or off. */
export interface Tracing {
  readonly enabled: boolean;
  /** Exports the spans still buffered, then stops; resolves within `TRACING_LIMITS.shutdownFlushMs` even when the collector is away. */
  shutdown(): Promise<void>;
}

/** Whether `env` asks for traces: an OTLP endpoint is named and the SDK is not disabled (OpenTelemetry "Environment Variable Specification"). */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

function start(env: NodeJS.ProcessEnv): Tracing {
  if (!tracingWanted(env)) return { enabled: false, shutdown: async () => undefined };
  // Required only now: with tracing off, no SDK module is loaded at all.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sdk = require('./tracing-sdk') as typeof import('./tracing-sdk');
  try {
    return sdk.startTracing(env);
  } catch (error) {
    // Before main() and its error handler: the same one-line refusal a bad setting gets.
    process.stderr.write(`Invalid configuration: ${(error as Error).message}\n`);
    process.exit(1);
  }
}

/** This process's tracing, started as this module loads. */
export const tracing: Tracing = start(process.env);
