import { type IncomingMessage, type Server, createServer } from 'node:http';

/** One span as OTLP/JSON carries it, its attributes flattened to plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

/** One export request: its content type and body. */
export interface ReceivedExport {
  contentType: string;
  body: Buffer;
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}

function valueOf(value: OtlpAnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  return value.doubleValue;
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

/**
 * A collector's OTLP/HTTP trace endpoint (`POST /v1/traces`, OpenTelemetry Protocol "OTLP/HTTP"), for tests: it keeps
 * every export and answers 200 with an empty response; {@link spans} decodes the http/json ones.
 */
export class OtlpReceiver {
  private constructor(
    private readonly server: Server,
    /** e.g. `http://127.0.0.1:4318`, for OTEL_EXPORTER_OTLP_ENDPOINT. */
    readonly endpoint: string,
    /** Every export received, in order. */
    readonly exports: ReceivedExport[],
  ) {}

  /** Listens on a free port of 127.0.0.1. */
  static async start(): Promise<OtlpReceiver> {
    const exports: ReceivedExport[] = [];
    const server = createServer((request, response) => {
      void readBody(request).then((body) => {
        const contentType = String(request.headers['content-type']);
        const traces = request.method === 'POST' && request.url === '/v1/traces';
        if (traces) exports.push({ contentType, body });
        const json = contentType.startsWith('application/json');
        response.writeHead(traces ? 200 : 404, { 'Content-Type': json ? 'application/json' : 'application/x-protobuf' });
        response.end(json ? '{}' : undefined);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    return new OtlpReceiver(server, `http://127.0.0.1:${port}`, exports);
  }

  /** The spans of every http/json export so far. */
  spans(): ReceivedSpan[] {
    return this.exports
      .filter(({ contentType }) => contentType.startsWith('application/json'))
      .flatMap(({ body }) => {
        const request = JSON.parse(body.toString('utf8')) as {
          resourceSpans: {
            scopeSpans: {
              spans: (Omit<ReceivedSpan, 'attributes' | 'links'> & { attributes?: { key: string; value: OtlpAnyValue }[]; links?: ReceivedSpan['links'] })[];
            }[];
          }[];
        };
        return request.resourceSpans.flatMap(({ scopeSpans }) =>
          scopeSpans.flatMap(({ spans }) =>
            spans.map((span) => ({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? '',
              name: span.name,
              kind: span.kind,
              attributes: Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, valueOf(value)])),
              links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
            })),
          ),
        );
      });
  }

  /** Polls until `found` returns something for the spans received, or throws after `timeoutMs` listing what came. */
  async waitFor<T>(found: (spans: ReceivedSpan[]) => T | undefined, timeoutMs = 10_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const result = found(this.spans());
      if (result !== undefined) return result;
      if (Date.now() > deadline) {
        const names = this.spans().map((span) => `${span.name} (${span.traceId}/${span.spanId} <- ${span.parentSpanId})`);
        throw new Error(`not received within ${timeoutMs} ms; spans so far:\n${names.join('\n')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
