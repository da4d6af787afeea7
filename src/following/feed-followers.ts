import type { SpanContext } from '@opentelemetry/api';
import type { FastifyBaseLogger } from 'fastify';
import type { Scope } from '../auth/api-key-policy';
import { type ApiKeyAuthenticator, hasExpired } from '../auth/api-key.authenticator';
import type { KeyChanges } from '../auth/key-changes';
import { AppError } from '../errors/error-catalogue';
import type { EventStreamStart, PetEvent, PetEventService } from '../events/pet-event.service';
import { type Guard, type GuardState, keyNoLongerValid } from '../guard/guard';
import { FOLLOWER_LIMITS, type FollowerLimits } from '../limits';
import { traceDelivery } from '../observability/event-delivery.tracer';
import type { FeedTransport, Metrics } from '../observability/metrics.registry';
import { ReaderPace } from './reader-pace';

/** Why the server ends a stream: its key no longer admits it (the client needs another key), or the instance stops (reconnect). */
export type StreamEnd = { reason: 'key'; error: AppError } | { reason: 'shutdown' };

/** What a transport gives {@link FeedFollowers} for one of its streams: how it ends one, and how it cuts one. */
export interface StreamTransport {
  readonly transport: Exclude<FeedTransport, 'webhook'>;
  /**
   * Ends the stream its transport's way: SSE sends a last `error` event in the Error shape, a WebSocket closes with 4403
   * (key) or 1001 (shutdown). Called once, synchronously; nothing of the stream is sent after it.
   */
  end(why: StreamEnd): void;
  /** Cuts the connection at once: a client that has not taken its end within FOLLOWER_LIMITS.closeMs of a shutdown. */
  cut(): void;
  /** Bytes queued for the client now, in the server's buffers and the socket's: what the pacing rule reads. */
  buffered(): number;
}

/** The setTimeout's longest delay; a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * One stream the feed's followers share a budget, a key and a pace through: an SSE response, or a WebSocket connection
 * with its subscriptions. Made by {@link FeedFollowers.admit}; its transport calls {@link release} when it closes.
 */
export class FeedStream {
  private isEnded = false;
  private released = false;
  private expiry: NodeJS.Timeout | undefined;
  /** Null: never. Moved by a roll (a re-check finds the new expiry). */
  private expiresAt: Date | null;
  /** The pacing rule (docs/events.md "Following"), over the transport's buffers. */
  readonly pace: ReaderPace;
  /** Resolves once the transport has released the stream (its connection closed). */
  readonly closed: Promise<void>;
  private resolveClosed!: () => void;

  constructor(
    private readonly owner: FeedFollowers,
    readonly state: GuardState & { apiKeyId: number },
    readonly transport: StreamTransport,
    private readonly limits: FollowerLimits,
  ) {
    this.expiresAt = state.credential?.expiresAt ?? null;
    this.pace = new ReaderPace(() => transport.buffered(), limits);
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  /** The key's id. */
  get apiKeyId(): number {
    return this.state.apiKeyId;
  }

  /** Whether the server has ended the stream (key or shutdown): nothing more is delivered on it. */
  get ended(): boolean {
    return this.isEnded || this.released;
  }

  /**
   * Refuses, with FORBIDDEN and RFC 6750's `insufficient_scope`, what the stream's key may not follow (a WebSocket
   * subscription's root fields: api-key-policy.ts OPERATION_SCOPES).
   */
  authorize(scopes: Iterable<Scope | undefined>): void {
    this.owner.options.guard.authorize(this.state, scopes);
  }

  /**
   * The feed after `start` (replayed), then live, as PetEventService.follow gives it, through this stream's rules: an
   * event is handed out only while the stream has not ended and its key has not expired (checked at each event, so not
   * even a late timer lets one through); each is counted and, with tracing on, sent as a span linked to `span`.
   * @param delivery.name - what the span and the metric call the event: the SSE event type, or the subscription field.
   */
  follow(start: EventStreamStart, delivery: { name: string; span?: SpanContext }): AsyncIterableIterator<PetEvent> {
    const events = this.owner.options.events.follow(start);
    const done = async (): Promise<IteratorResult<PetEvent>> => {
      await events.return?.();
      return { done: true, value: undefined };
    };
    const { metrics } = this.owner.options;
    return {
      next: async () => {
        if (this.ended) return done();
        const result = await events.next();
        if (result.done) return result;
        if (this.expiresAt !== null && hasExpired({ expiresAt: this.expiresAt })) this.endForKey(keyNoLongerValid(this.expiresAt));
        if (this.ended) return done();
        metrics.countFeedDelivery(this.transport.transport);
        traceDelivery(delivery.span, delivery.name);
        return result;
      },
      return: () => events.return?.() ?? Promise.resolve({ done: true, value: undefined }),
      throw: (error?: unknown) => events.throw?.(error) ?? Promise.reject(error instanceof Error ? error : new Error(String(error))),
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  /** Gives the stream's place back: its transport calls it once its connection has closed. Idempotent. */
  release(): void {
    if (this.released) return;
    this.released = true;
    clearTimeout(this.expiry);
    this.pace.closed();
    this.owner.released(this);
    this.resolveClosed();
  }

  /** Ends the stream because its key no longer admits it; once. */
  endForKey(error: AppError): void {
    this.end({ reason: 'key', error });
  }

  /**
   * Ends the stream, its transport's way; once, and never after it was released. A client that has not taken the end of
   * a stream its key ended within FOLLOWER_LIMITS.closeMs is cut, so it holds no place (at shutdown, {@link FeedFollowers.close} cuts).
   */
  end(why: StreamEnd): void {
    if (this.ended) return;
    this.isEnded = true;
    clearTimeout(this.expiry);
    this.transport.end(why);
    if (why.reason === 'key') {
      this.expiry = setTimeout(() => this.released || this.transport.cut(), this.limits.closeMs);
      this.expiry.unref();
    }
  }

  /** Ends the stream at `expiresAt` (null: never), instead of at any time armed before. */
  expireAt(expiresAt: Date | null): void {
    clearTimeout(this.expiry);
    this.expiry = undefined;
    this.expiresAt = expiresAt;
    if (expiresAt === null || this.ended) return;
    const delay = expiresAt.getTime() - Date.now();
    if (delay <= 0) return this.endForKey(keyNoLongerValid(expiresAt));
    this.expiry = setTimeout(() => this.expireAt(expiresAt), Math.min(delay, MAX_TIMER_MS));
    this.expiry.unref();
  }
}

/** What {@link FeedFollowers} is built from. */
export interface FeedFollowersOptions {
  /** The feed's operations every stream follows through. */
  events: Pick<PetEventService, 'follow'>;
  /** Scopes, by the guard's rule. */
  guard: Pick<Guard, 'authorize'>;
  /** Where open streams' keys are looked up again. */
  authentication: Pick<ApiKeyAuthenticator, 'activeIds'>;
  /** What tells of keys changed (revoked, rolled) here or anywhere. */
  keyChanges: Pick<KeyChanges, 'onForget'>;
  metrics: Pick<Metrics, 'countFeedStream' | 'countFeedDelivery'>;
  /** How often every open stream's key is looked up again, for changes nothing announced (no Redis). */
  keyRecheckMs: number;
  log: Pick<FastifyBaseLogger, 'warn'>;
  /** FOLLOWER_LIMITS, or shorter ones in tests. */
  limits?: FollowerLimits;
}

/**
 * Every stream that follows the change feed on this instance, whatever its transport (docs/events.md "Following",
 * docs/architecture.md "Following"): the one home of a follower's rules. The transports (SSE in sse.transport.ts,
 * GraphQL over WebSocket in graphql/subscription.server.ts) only translate; webhooks take the feed's wake-up and the
 * metrics through {@link FeedFollowers.forWebhooks}.
 *
 * - **Admission**: a stream of an admitted caller (the guard has checked its key, origin and rate limit) takes one of
 *   its key's FOLLOWER_LIMITS.maxStreamsPerKey places on this instance, SSE and WebSocket together.
 * - **The key at every instant**: a stream ends when its key expires (a timer per stream, from its expiry, moved by a
 *   roll), at once when this process forgets the key (KeyChanges `onForget`: revoked or rolled here, or announced by
 *   another process through Redis, or every key when that channel was lost), and after each `keyRecheckMs` look-up for
 *   changes nobody announced.
 * - **Pacing**: {@link ReaderPace}, one rule in bytes and time.
 * - **Metrics**: streams open and events delivered, by transport.
 * - **Shutdown**: {@link close} ends every stream and cuts those whose clients do not take the end in time.
 */
export class FeedFollowers {
  private readonly streams = new Set<FeedStream>();
  private readonly perKey = new Map<number, number>();
  private readonly limits: FollowerLimits;
  private readonly stopHearing: () => void;
  private readonly periodic: NodeJS.Timeout;
  private accepting = true;

  /** @param options - read by its streams too (`events`, `guard`, `metrics`). */
  constructor(readonly options: FeedFollowersOptions) {
    this.limits = options.limits ?? FOLLOWER_LIMITS;
    this.stopHearing = options.keyChanges.onForget((ids) => void this.recheck(ids));
    this.periodic = setInterval(() => void this.recheck(), options.keyRecheckMs);
    this.periodic.unref();
  }

  /** The most streams one key may hold here. */
  get maxStreamsPerKey(): number {
    return this.limits.maxStreamsPerKey;
  }

  /** Streams open now. */
  get size(): number {
    return this.streams.size;
  }

  /**
   * Admits a stream for the caller the guard admitted (`state`: its credential), through `transport`.
   * @throws AppError UNAUTHENTICATED (`invalid_token`) when its key has expired; TOO_MANY_REQUESTS (`Retry-After: 1`) when
   *   the key holds FOLLOWER_LIMITS.maxStreamsPerKey streams here already; SERVICE_UNAVAILABLE once shutting down.
   */
  admit(state: GuardState, transport: StreamTransport): FeedStream {
    const credential = state.credential;
    if (!credential) throw new Error('admit runs after the guard has admitted the caller');
    if (!this.accepting) throw new AppError('SERVICE_UNAVAILABLE', 'Shutting down: reconnect to another instance.');
    if (hasExpired(credential)) throw keyNoLongerValid(credential.expiresAt!);
    const held = this.perKey.get(credential.id) ?? 0;
    if (held >= this.limits.maxStreamsPerKey) {
      throw new AppError(
        'TOO_MANY_REQUESTS',
        `Too many open streams for this API key: at most ${this.limits.maxStreamsPerKey} per instance, SSE streams and WebSockets together; close one first.`,
        { 'Retry-After': '1' },
      );
    }
    this.perKey.set(credential.id, held + 1);
    const stream = new FeedStream(this, { ...state, apiKeyId: credential.id }, transport, this.limits);
    this.streams.add(stream);
    this.options.metrics.countFeedStream(transport.transport, 1);
    stream.expireAt(credential.expiresAt);
    return stream;
  }

  /** Called by {@link FeedStream.release}. */
  released(stream: FeedStream): void {
    if (!this.streams.delete(stream)) return;
    const left = (this.perKey.get(stream.apiKeyId) ?? 1) - 1;
    if (left > 0) this.perKey.set(stream.apiKeyId, left);
    else this.perKey.delete(stream.apiKeyId);
    this.options.metrics.countFeedStream(stream.transport.transport, -1);
  }

  /**
   * Looks keys `ids` (default: every open stream's) up again: ends the streams of those no longer active, re-arms the
   * others' expiry. Never throws: a failed look-up is logged, and the next one (an announcement, or the periodic one) retries.
   */
  async recheck(ids?: readonly number[]): Promise<void> {
    const only = ids === undefined ? undefined : new Set(ids);
    const open = new Set([...this.streams].map((stream) => stream.apiKeyId).filter((id) => only === undefined || only.has(id)));
    if (open.size === 0) return;
    try {
      const active = await this.options.authentication.activeIds(open);
      for (const stream of this.streams) {
        if (!open.has(stream.apiKeyId)) continue;
        if (active.has(stream.apiKeyId)) stream.expireAt(active.get(stream.apiKeyId) ?? null);
        else stream.endForKey(keyNoLongerValid());
      }
    } catch (error) {
      this.options.log.warn({ err: error }, 'cannot look the API keys of open streams up again now');
    }
  }

  /**
   * What the webhook dispatcher takes of following: the streams-open gauge and the delivered-events counter under
   * `transport="webhook"`, an endpoint being one stream.
   */
  forWebhooks(): { opened: () => void; closed: () => void; delivered: () => void } {
    return {
      opened: () => this.options.metrics.countFeedStream('webhook', 1),
      closed: () => this.options.metrics.countFeedStream('webhook', -1),
      delivered: () => this.options.metrics.countFeedDelivery('webhook'),
    };
  }

  /** Ends every stream (and refuses new ones); resolves once all are closed, cutting those not closed within FOLLOWER_LIMITS.closeMs. */
  async close(): Promise<void> {
    this.accepting = false;
    clearInterval(this.periodic);
    this.stopHearing();
    const streams = [...this.streams];
    for (const stream of streams) stream.end({ reason: 'shutdown' });
    const cut = setTimeout(() => {
      for (const stream of this.streams) stream.transport.cut();
    }, this.limits.closeMs);
    try {
      await Promise.all(streams.map((stream) => stream.closed));
    } finally {
      clearTimeout(cut);
    }
  }
}
