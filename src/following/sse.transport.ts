import { PassThrough } from 'node:stream';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import { type EventStreamStart, type PetEvent, toEventBody } from '../events/pet-event.service';
import type { GuardState } from '../guard/guard';
import { PET_FEED_LIMITS } from '../limits';
import { subscriptionSpanContext } from '../observability/event-delivery.tracer';
import type { FeedFollowers, StreamEnd } from './feed-followers';
import { TurnCork } from './turn-cork';

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

/** The SSE stream's own timing: its heartbeat comment and its `retry:` field, in ms. */
export interface EventStreamTiming {
  heartbeatMs: number;
  retryMs: number;
}

/** The SSE event that ends a stream whose key no longer admits it: `error`, its data in the Error shape. */
export const KEY_END_EVENT = 'error';

/**
 * Server-sent event streams of the change feed (docs/events.md "Server-sent events"): the SSE transport of
 * {@link FeedFollowers}, which admits each stream, ends it when its key no longer admits it or the instance stops, and
 * paces it. Here only what is SSE's own: `retry:` first, each event as a frame (made and encoded once per event object,
 * whatever the number of streams: followers of one feed share its event objects), a heartbeat comment every
 * `heartbeatMs`, and, when the key ends the stream, a last `error` event in the Error shape, so a client can tell "get
 * another key" from "reconnect".
 */
export class EventStreams {
  private readonly frames = new WeakMap<PetEvent, Buffer>();

  constructor(
    private readonly followers: FeedFollowers,
    private readonly log: Pick<FastifyBaseLogger, 'warn'>,
    private readonly timing: EventStreamTiming = { heartbeatMs: PET_FEED_LIMITS.heartbeatMs, retryMs: PET_FEED_LIMITS.retryMs },
  ) {}

  private frameOf(event: PetEvent): Buffer {
    let frame = this.frames.get(event);
    if (frame === undefined) {
      const body = toEventBody(event);
      frame = Buffer.from(formatEventFrame({ id: body.id, event: body.type, data: JSON.stringify(body) }));
      this.frames.set(event, frame);
    }
    return frame;
  }

  /**
   * Answers `reply` with the feed after `start` as text/event-stream, for the caller the guard admitted (`state`), until
   * the client leaves, the server ends the stream (FeedFollowers), or the events throw (the client resumes with
   * Last-Event-ID). With tracing on, each event sent gets a span linked to the span active now, the request's.
   * @returns the reply, sent (the route handler returns it).
   * @throws AppError from FeedFollowers.admit (TOO_MANY_REQUESTS, UNAUTHENTICATED, SERVICE_UNAVAILABLE), before anything is sent.
   */
  serve(reply: FastifyReply, state: GuardState, start: EventStreamStart): FastifyReply {
    const body = new PassThrough();
    const raw = reply.raw;
    let finished = false;
    // The events of one feed advance arrive in one turn of the event loop: held until the next, they leave in one write.
    const cork = new TurnCork(raw);
    const send = (frame: string | Buffer) => {
      cork.hold();
      body.write(frame);
    };
    const finish = () => {
      if (finished) return;
      finished = true;
      cork.afterRelease(() => body.end());
    };
    const stream = this.followers.admit(state, {
      transport: 'sse',
      buffered: () => body.writableLength + body.readableLength + raw.writableLength,
      end: (why: StreamEnd) => {
        if (why.reason === 'key' && !finished) send(formatEventFrame({ event: KEY_END_EVENT, data: JSON.stringify(why.error.toBody()) }));
        finish();
      },
      cut: () => raw.destroy(),
    });
    const cutSlow = () => {
      this.log.warn({ transport: 'sse', bufferedBytes: stream.transport.buffered() }, 'closing a stream whose client stopped reading');
      finished = true;
      raw.destroy();
    };
    const write = (frame: string | Buffer): boolean => {
      if (finished || stream.ended) return false;
      if (!stream.pace.fits(Buffer.byteLength(frame))) {
        cutSlow();
        return false;
      }
      send(frame);
      return true;
    };
    const events = stream.follow(start, { name: 'pet.created', span: subscriptionSpanContext() });
    const heartbeat = setInterval(() => write(HEARTBEAT_FRAME), this.timing.heartbeatMs);
    heartbeat.unref();
    body.on('drain', stream.pace.progressed);
    raw.on('drain', stream.pace.progressed);
    body.once('close', () => {
      finished = true;
      clearInterval(heartbeat);
      // Wakes a pump waiting for the next event.
      void events.return?.();
      stream.release();
    });

    write(formatRetryFrame(this.timing.retryMs));
    void (async () => {
      try {
        for await (const event of events) {
          if (!write(this.frameOf(event))) break;
          if (stream.pace.behind && !(await stream.pace.catchUp())) {
            if (!finished) cutSlow();
            break;
          }
        }
      } catch (error) {
        // The client reconnects with Last-Event-ID and loses nothing.
        this.log.warn({ err: error }, 'event stream ended: its events could not be read');
      } finally {
        finish();
      }
    })();
    reply.header('Content-Type', 'text/event-stream; charset=utf-8');
    // Proxies that buffer answers (nginx) would hold the events back.
    reply.header('X-Accel-Buffering', 'no');
    return reply.send(body);
  }
}
