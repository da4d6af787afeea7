import { PassThrough } from 'node:stream';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { PET_FEED_LIMITS, SUBSCRIPTION_LIMITS } from '../limits';
import { subscriptionSpanContext, traceDelivery } from '../observability/event-delivery.tracer';

/** One server-sent event: `id` and `event` are single lines; `data` may span lines. */
export interface ServerSentEvent {
  id?: string;
  event?: string;
  data: string;
}

/** A comment line: ignored by clients, it keeps proxies and the client's idle timers from closing the stream. */
export const HEARTBEAT_FRAME = ':\n\n';

/**
 * The text/event-stream frame of `event` (WHATWG HTML "Server-sent events", "Parsing an event stream"): `id:`, `event:`,
 * one `data:` line per line of `data`, then a blank line.
 * @throws Error when `id` or `event` holds a line break (it would end the field early) or `id` a NUL (clients ignore it).
 */
export function formatEventFrame({ id, event, data }: ServerSentEvent): string {
  if (/[\r\n]/.test(`${id ?? ''}${event ?? ''}`) || id?.includes('\0')) throw new Error('an SSE id or event name must be one line without NUL');
  const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}\n`);
  return `${id === undefined ? '' : `id: ${id}\n`}${event === undefined ? '' : `event: ${event}\n`}${lines.join('')}\n`;
}

/** The frame telling clients how long to wait before reconnecting, in milliseconds. */
export function formatRetryFrame(ms: number): string {
  return `retry: ${Math.round(ms)}\n\n`;
}

/** What a stream may hold and send: its bound on unsent bytes, heartbeat and retry intervals, its close grace at shutdown. */
export interface EventStreamLimits {
  maxBufferedBytes: number;
  heartbeatMs: number;
  retryMs: number;
  closeMs: number;
  /** Unsent bytes at which a stream stops taking events until its client reads. */
  pauseAtBytes: number;
  /** How long a paused stream may wait for its client to read before it is cut. */
  stallMs: number;
}

const DEFAULT_LIMITS: EventStreamLimits = {
  maxBufferedBytes: SUBSCRIPTION_LIMITS.maxBufferedBytes,
  pauseAtBytes: PET_FEED_LIMITS.streamPauseBytes,
  stallMs: PET_FEED_LIMITS.stalledReaderMs,
  heartbeatMs: PET_FEED_LIMITS.heartbeatMs,
  retryMs: PET_FEED_LIMITS.retryMs,
  closeMs: SUBSCRIPTION_LIMITS.closeHandshakeMs,
};

/**
 * The open SSE responses of one app (docs/events.md "Server-sent events"): each sends `retry:` first, then its events as
 * fast as its client reads them, and a heartbeat comment every `heartbeatMs`. Once `pauseAtBytes` wait unsent (the
 * response's and the socket's buffers), a stream takes no more events until its client reads (its follower holds only a
 * position, so waiting costs nothing); a client that reads nothing for `stallMs` is cut, as a slow WebSocket is, and
 * resumes with Last-Event-ID. Nothing ever queues beyond `maxBufferedBytes`. {@link close} ends every stream, cutting
 * those whose last bytes are not taken within `closeMs`.
 */
export class EventStreams {
  private readonly open = new Set<{ end: () => void; cut: () => void; closed: Promise<void> }>();
  /** Each item's frame, made and encoded once however many streams send it (followers of one feed share its event objects), and its event name. */
  private readonly frames = new WeakMap<object, { bytes: Buffer; event: string }>();
  private accepting = true;

  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly limits: EventStreamLimits = DEFAULT_LIMITS,
  ) {}

  /** Streams now open. */
  get size(): number {
    return this.open.size;
  }

  /**
   * Answers `reply` with `events`, each framed by `toFrame` (once per item object, whatever the number of streams), as text/event-stream, until the client leaves, the events end
   * or throw, or {@link close}; `events.return()` is called then (so a pending `next()` must end at it), and `onClosed`
   * once the response is done. With tracing on, each event sent gets a span linked to the span active now, the request's
   * (docs/operations.md "Tracing").
   * @returns the reply, sent (the route handler returns it).
   */
  serve<T extends object>(
    reply: FastifyReply,
    events: AsyncIterableIterator<T>,
    toFrame: (item: T) => ServerSentEvent,
    onClosed: () => void = () => undefined,
  ): FastifyReply {
    const frameOf = (item: T) => {
      let frame = this.frames.get(item);
      if (frame === undefined) {
        const event = toFrame(item);
        frame = { bytes: Buffer.from(formatEventFrame(event)), event: event.event ?? 'message' };
        this.frames.set(item, frame);
      }
      return frame;
    };
    const streamSpan = subscriptionSpanContext();
    const body = new PassThrough();
    const raw = reply.raw;
    let ended = false;
    let corked = false;
    const buffered = () => body.writableLength + body.readableLength + raw.writableLength;
    const cut = () => {
      this.log.warn({ bufferedBytes: buffered() }, 'closing an event stream whose client stopped reading');
      ended = true;
      raw.destroy();
    };
    const write = (frame: string | Buffer): boolean => {
      if (ended) return false;
      if (buffered() + Buffer.byteLength(frame) > this.limits.maxBufferedBytes) {
        cut();
        return false;
      }
      // The events of one feed advance arrive in one turn of the event loop: corked until the next, they leave in one write.
      if (!corked) {
        corked = true;
        raw.cork();
        setImmediate(() => {
          corked = false;
          raw.uncork();
        });
      }
      body.write(frame);
      return true;
    };
    const end = () => {
      if (ended) return;
      ended = true;
      body.end();
    };
    const heartbeat = setInterval(() => write(HEARTBEAT_FRAME), this.limits.heartbeatMs);
    heartbeat.unref();
    const closed = new Promise<void>((resolve) => body.once('close', resolve));
    const entry = { end, cut: () => raw.destroy(), closed };
    this.open.add(entry);
    void closed.then(() => {
      ended = true;
      clearInterval(heartbeat);
      this.open.delete(entry);
      // Wakes a pump waiting for the next event.
      void events.return?.();
      onClosed();
    });

    write(formatRetryFrame(this.limits.retryMs));
    void (async () => {
      try {
        for await (const event of events) {
          const frame = frameOf(event);
          if (!write(frame.bytes)) break;
          traceDelivery(streamSpan, frame.event);
          if (buffered() >= this.limits.pauseAtBytes && !(await this.readBelow(this.limits.pauseAtBytes, buffered, [body, raw]))) {
            if (!ended) cut();
            break;
          }
        }
      } catch (error) {
        // The client reconnects with Last-Event-ID and loses nothing.
        this.log.warn({ err: error }, 'event stream ended: its events could not be read');
      } finally {
        end();
      }
    })();
    if (!this.accepting) end();
    reply.header('Content-Type', 'text/event-stream; charset=utf-8');
    // Proxies that buffer answers (nginx) would hold the events back.
    reply.header('X-Accel-Buffering', 'no');
    return reply.send(body);
  }

  /**
   * Resolves true once `buffered()` is under `bytes` (each 'drain' of `emitters` is a look), false when it is not within
   * `stallMs` of the last progress or a stream closes first.
   */
  private readBelow(bytes: number, buffered: () => number, emitters: NodeJS.EventEmitter[]): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => settle(false), this.limits.stallMs);
      const look = () => {
        if (buffered() < bytes) return settle(true);
        timer.refresh();
      };
      const closed = () => settle(false);
      const settle = (result: boolean) => {
        clearTimeout(timer);
        for (const emitter of emitters) {
          emitter.off('drain', look);
          emitter.off('close', closed);
        }
        resolve(result);
      };
      for (const emitter of emitters) {
        emitter.on('drain', look);
        emitter.on('close', closed);
      }
    });
  }

  /** Ends every stream (and any opened later); resolves once all are closed, cutting the clients that do not read their end within `closeMs`. */
  async close(): Promise<void> {
    this.accepting = false;
    const streams = [...this.open];
    for (const stream of streams) stream.end();
    const cut = setTimeout(() => {
      for (const stream of this.open) stream.cut();
    }, this.limits.closeMs);
    try {
      await Promise.all(streams.map((stream) => stream.closed));
    } finally {
      clearTimeout(cut);
    }
  }
}
