import type { Logger } from 'pino';
import type { DatabaseBudget } from '../database/database-deadline';
import type { PetStatus } from '../pets/pet-status.enum';
import type { PetEvent, PetFeedRepository } from './pet-feed.repository';
import { PET_FEED_LIMITS, type PetFeedLimits } from '../limits';

/** Where a follower starts: after position `after` (replaying what follows), or, without it, from now; only `status` when given. */
export interface FollowOptions {
  after?: number;
  status?: PetStatus;
}

/**
 * One instance's view of the change feed (docs/events.md): reads past its last event with one query per advance, whatever
 * the number of followers, on a poke ({@link advance}) and every {@link PET_FEED_LIMITS.followEveryMs}, keeps the latest
 * {@link PET_FEED_LIMITS.recentEvents} events in memory, shared by every follower, and wakes its followers. A follower
 * holds only its position: it takes what follows it from the recent events, or, when it is further behind (a resume from
 * an old cursor), from the table a page at a time. So a follower costs the same memory however far behind it is, and
 * nothing is lost.
 */
export class PetFeed {
  /** The last position read and handed to the followers. */
  private delivered = 0;
  /** Whether `delivered` has been read from the table: until then (say, migrations pending) "now" is unknown. */
  private started = false;
  /** Events `recentFirst` … `delivered`, contiguous, shared by the followers. */
  private recent: PetEvent[] = [];
  private recentFirst = 1;
  /** Each follower's wake-up. */
  private readonly followers = new Set<() => void>();
  /** Told each time new events are read: {@link onAdvance}. */
  private readonly advanceListeners = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private again = false;
  /** Whether the last read failed: a database outage is logged once, when it starts, and once when it ends. */
  private failing = false;
  /** The highest head this process's sequencer has committed and told of: with nobody following, no need to read it. */
  private committedHead = 0;

  constructor(
    private readonly repository: PetFeedRepository,
    private readonly log: Pick<Logger, 'warn' | 'info'>,
    private readonly limits: PetFeedLimits = PET_FEED_LIMITS,
  ) {}

  /** The last position this instance has handed out: where a follower without `after` starts. */
  get position(): number {
    return this.delivered;
  }

  /** Followers now, for the metrics. */
  get followerCount(): number {
    return this.followers.size;
  }

  /**
   * Calls `listener` each time this instance reads new events (within milliseconds of their commit with Redis pokes), until
   * the returned function is called: how a follower that does not iterate (the webhook dispatcher) wakes with the feed.
   */
  onAdvance(listener: () => void): () => void {
    this.advanceListeners.add(listener);
    return () => void this.advanceListeners.delete(listener);
  }

  /**
   * Starts from the current head, then follows it. Never throws: while the head cannot be read (the database away, its
   * migrations pending), each tick tries again, and followers from now wait for it.
   */
  async start(): Promise<void> {
    this.timer = setInterval(() => this.advance(), this.limits.followEveryMs);
    this.timer.unref();
    this.advance();
    await this.reading;
  }

  /**
   * Reads what follows the last event now (after the read in progress, if any); never throws.
   * @param committedHead - the head this process's sequencer has just committed, if that is what advanced: trusted, so
   *   an instance with nobody following moves there without reading. Not for a head announced through Redis, which
   *   anyone on the channel could send.
   */
  advance(committedHead?: number): void {
    if (committedHead !== undefined && committedHead > this.committedHead) this.committedHead = committedHead;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = this.readNew().finally(() => {
      this.reading = undefined;
      if (this.again) {
        this.again = false;
        this.advance();
      }
    });
  }

  private async readNew(): Promise<void> {
    try {
      if (!this.started) {
        this.delivered = await this.repository.head();
        this.recent = [];
        this.recentFirst = this.delivered + 1;
        this.started = true;
        for (const wake of this.followers) wake();
      }
      if (this.followers.size === 0) return await this.moveToHead();
      for (;;) {
        const events = await this.repository.read({ after: this.delivered, limit: this.limits.readBatch });
        if (this.failing) this.log.info('pet feed: reading new events again');
        this.failing = false;
        if (events.length === 0) return;
        this.remember(events);
        for (const wake of this.followers) wake();
        for (const listener of this.advanceListeners) listener();
        if (events.length < this.limits.readBatch) return;
      }
    } catch (error) {
      if (!this.failing) this.log.warn({ err: error }, 'pet feed: reading new events failed; retrying every tick');
      this.failing = true;
    }
  }

  /**
   * With nobody following here, where the feed stands is all that is read, not its events: the advance is told all the
   * same, and a follower that comes later replays from the table up to that position (the head is written in the
   * transaction that stamps, so every event up to it is committed). The head this process's sequencer told of is not
   * read again.
   */
  private async moveToHead(): Promise<void> {
    const head = this.committedHead > this.delivered ? this.committedHead : await this.repository.head();
    if (this.failing) this.log.info('pet feed: reading new events again');
    this.failing = false;
    if (head <= this.delivered) return;
    this.delivered = head;
    this.recent = [];
    this.recentFirst = head + 1;
    for (const wake of this.followers) wake();
    for (const listener of this.advanceListeners) listener();
  }

  /** Appends `events` (they follow `delivered`) to the recent ones, dropping the oldest beyond the bound, a tenth at a time. */
  private remember(events: readonly PetEvent[]): void {
    this.recent.push(...events);
    this.delivered = events[events.length - 1].seq;
    const excess = this.recent.length - this.limits.recentEvents;
    if (excess > 0) {
      const dropped = Math.max(excess, Math.ceil(this.limits.recentEvents / 10));
      this.recent = this.recent.slice(dropped);
      this.recentFirst += dropped;
    }
  }

  /**
   * One page of the feed, from the table.
   * @param after - a position (0: the beginning); `limit` events at most; only `status` when given.
   * @throws DatabaseDeadlineError (503).
   */
  page(after: number, limit: number, status: PetStatus | undefined, budget?: DatabaseBudget): Promise<PetEvent[]> {
    return this.repository.read({ after, limit, status, budget });
  }

  /**
   * Every event after `options.after` (replayed), then each new one, in feed order, each once; from now without `after`
   * (this instance's last position when called). Ends when its consumer calls `return()`; throws what the table's reads
   * throw (DatabaseDeadlineError).
   */
  follow({ after, status }: FollowOptions): AsyncIterableIterator<PetEvent> {
    // Registered now, not at the first next(): "from now" is the moment of the call.
    const follower = new Follower(after ?? (this.started ? this.delivered : undefined), status);
    this.followers.add(follower.wake);
    const events = this.events(follower);
    return {
      next: () => events.next(),
      return: () => {
        follower.stop();
        return events.return(undefined);
      },
      throw: (error?: unknown) => {
        follower.stop();
        return events.throw(error);
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  private async *events(follower: Follower): AsyncGenerator<PetEvent, undefined> {
    try {
      while (!follower.stopped) {
        if (follower.position === undefined) {
          // From now, called before the feed knew where now is.
          if (this.started) follower.position = this.delivered;
          else await follower.wait();
        } else if (follower.position >= this.delivered) {
          await follower.wait();
        } else if (follower.position + 1 >= this.recentFirst) {
          // Looked up by position each time: the recent events may have moved while this one was being consumed.
          const event = this.recent[follower.position + 1 - this.recentFirst];
          follower.position = event.seq;
          if (follower.matches(event)) yield event;
        } else {
          // Further back than memory: from the table, up to where the recent events begin.
          const upTo = this.recentFirst - 1;
          const page = await this.repository.read({ after: follower.position, upTo, status: follower.status, limit: this.limits.replayBatch });
          for (const event of page) {
            follower.position = event.seq;
            yield event;
          }
          if (page.length < this.limits.replayBatch) follower.position = Math.max(follower.position, upTo);
        }
      }
      return undefined;
    } finally {
      this.followers.delete(follower.wake);
    }
  }

  /** Stops following the head; followers end when their consumers return. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.reading;
  }
}

/** One follower: its position and status filter, and how it waits for the feed to move. */
class Follower {
  stopped = false;
  private resolveWait: (() => void) | undefined;

  constructor(
    public position: number | undefined,
    readonly status: PetStatus | undefined,
  ) {}

  /** Called by the feed when it moves, and by {@link stop}. */
  readonly wake = (): void => {
    const resolve = this.resolveWait;
    this.resolveWait = undefined;
    resolve?.();
  };

  matches(event: PetEvent): boolean {
    return this.status === undefined || event.pet.status === this.status;
  }

  /** Resolves at the feed's next move or at stop. */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => (this.resolveWait = resolve));
  }

  stop(): void {
    this.stopped = true;
    this.wake();
  }
}
