import type { FollowerLimits } from '../limits';

/** What the pacing rule reads of the limits. */
export type PaceLimits = Pick<FollowerLimits, 'pauseAtBytes' | 'stalledReaderMs' | 'maxBufferedBytes'>;

/**
 * The one pacing rule of every stream of the change feed, SSE or WebSocket (docs/events.md "Following"): once
 * `pauseAtBytes` wait unsent, the stream takes no more events until its client reads below it (its follower holds only a
 * position, so waiting costs nothing); a client that reads nothing for `stalledReaderMs` while events wait is cut; nothing
 * ever queues beyond `maxBufferedBytes`. The transport says how many bytes wait ({@link buffered}), calls
 * {@link progressed} each time some left (a `drain`, a write done) and {@link closed} when the connection closes.
 */
export class ReaderPace {
  private waiting: { promise: Promise<boolean>; settle: (reading: boolean) => void; timer: NodeJS.Timeout } | undefined;
  private open = true;

  /**
   * @param buffered - bytes queued for the client now, in the server's buffers and the socket's.
   */
  constructor(
    private readonly buffered: () => number,
    private readonly limits: PaceLimits,
  ) {}

  /** Whether `bytes` more may be queued; false (the stream is to be cut) when they would pass `maxBufferedBytes`. */
  fits(bytes: number): boolean {
    return this.buffered() + bytes <= this.limits.maxBufferedBytes;
  }

  /** Whether the stream must wait for its client before it takes another event. */
  get behind(): boolean {
    return this.buffered() >= this.limits.pauseAtBytes;
  }

  /**
   * Resolves true once the client has read below `pauseAtBytes` (at once when it has), false when it read nothing for
   * `stalledReaderMs` or the stream closed: the stream is then to be cut. Concurrent callers share one wait.
   */
  catchUp(): Promise<boolean> {
    if (!this.open) return Promise.resolve(false);
    if (!this.behind) return Promise.resolve(true);
    if (this.waiting) return this.waiting.promise;
    let settle!: (reading: boolean) => void;
    const promise = new Promise<boolean>((resolve) => (settle = resolve));
    const timer = setTimeout(() => this.settle(false), this.limits.stalledReaderMs);
    this.waiting = { promise, settle, timer };
    return promise;
  }

  /** Some bytes left for the client: the wait ends when it is below the pause, else its stall timer starts again. */
  readonly progressed = (): void => {
    if (!this.waiting) return;
    if (this.behind) this.waiting.timer.refresh();
    else this.settle(true);
  };

  /** The connection closed: any wait ends, and every later one, with false. */
  readonly closed = (): void => {
    this.open = false;
    this.settle(false);
  };

  private settle(reading: boolean): void {
    const waiting = this.waiting;
    if (!waiting) return;
    this.waiting = undefined;
    clearTimeout(waiting.timer);
    waiting.settle(reading);
  }
}
