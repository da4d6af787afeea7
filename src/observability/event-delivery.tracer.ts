import { type SpanContext, SpanKind, TraceFlags, isSpanContextValid, trace } from '@opentelemetry/api';

const tracer = trace.getTracer('pet-store-gateway');

/**
 * The context of the span now active when it is sampled, for a subscription (WebSocket `subscribe`, SSE stream) to keep:
 * each event it delivers later links to it ({@link traceDelivery}). Undefined with tracing off or the span not sampled.
 */
export function subscriptionSpanContext(): SpanContext | undefined {
  const span = trace.getActiveSpan()?.spanContext();
  return span && isSpanContextValid(span) && span.traceFlags & TraceFlags.SAMPLED ? span : undefined;
}

/**
 * Records the delivery of one event of the subscription whose span is `subscription` (docs/operations.md "Tracing"): a
 * PRODUCER span `send {event}` in a trace of its own, with a span link to the subscription's span, so a delivery is found
 * from its subscription without one trace lasting as long as the connection. Nothing when `subscription` is undefined.
 */
export function traceDelivery(subscription: SpanContext | undefined, event: string): void {
  if (subscription === undefined) return;
  tracer
    .startSpan(`send ${event}`, { kind: SpanKind.PRODUCER, root: true, links: [{ context: subscription }], attributes: { 'messaging.operation.type': 'send' } })
    .end();
}
