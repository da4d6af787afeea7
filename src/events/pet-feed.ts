import type { Logger } from 'pino';
import type { DatabaseBudget } from '../database/database-deadline';
import type { PetStatus } from '../pets/pet-status.enum';
import type { PetEvent, PetFeedRepository } from './pet-feed.repository';

/** What a follower receives; re-exported so the surfaces name it without reaching the repository. */
export type { PetEvent } from './pet-feed.repository';
import { PET_FEED_LIMITS, type PetFeedLimits } from '../limits';

/** Events this instance read in one go: positions `after + 1` … `last`, contiguous. */
interface FeedBatch {
  readonly after: number;
  readonly last: number;
  readonly events: readonly PetEvent[];
}

/** Where a follower starts: after position `after` (replaying what follows), or, without it, from now; only `status` when given. */
export interface FollowOptions {
  after?: number;
  status?: PetStatus;
}

/**
 * One instance's view of the change feed (docs/events.md): reads past its last event with one query per advance, whatever
 * the number of followers, on a poke ({@link advance}) and every {@link PET_FEED_LIMITS.followEveryMs}, and hands each
 * batch to its followers. A follower replays from the table until it meets the live batches; one that falls behind by
 * more than {@link PET_FEED_LIMITS.maxQueuedEvents} drops them and reads from the table again, so memory stays bounded
 * and nothing is lost.
 */
export class PetFeed {
  /** The last position read and handed to the followers. */
  private delivered = 0;
  private readonly followers = new Set<(batch: FeedBatch) => void>();
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly repository: PetFeedRepository,
    private readonly log: Pick<Logger, 'warn'>,
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

  /** Starts from the current head, then follows it. @throws DatabaseDeadlineError when the head cannot be read. */
  async start(): Promise<void> {
    this.delivered = await this.repository.head();
    this.timer = setInterval(() => this.advance(), this.limits.followEveryMs);
    this.timer.unref();
  }

  /** Reads what follows the last event now (after the read in progress, if any); never throws. */
  advance(): void {
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
      for (;;) {
        const events = await this.repository.read({ after: this.delivered, limit: this.limits.readBatch });
        if (events.length === 0) return;
        const batch = { after: this.delivered, last: events[events.length - 1].seq, events };
        this.delivered = batch.last;
        for (const follower of this.followers) follower(batch);
        if (events.length < this.limits.readBatch) return;
      }
    } catch (error) {
      this.log.warn({ err: error }, 'pet feed: reading new events failed; retrying');
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
   * Every event after `options.after` (replayed from the table), then each new one, in feed order, each once; from now
   * without `after`. Ends when its consumer calls `return()`; throws what the table's reads throw (DatabaseDeadlineError).
   */
  follow({ after, status }: FollowOptions): AsyncIterableIterator<PetEvent> {
    // Registered now, not at the first next(): "from now" is the moment of the call.
    const follower = new Follower(after ?? this.delivered, status, this.limits.maxQueuedEvents);
    this.followers.add(follower.receive);
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
        const next = follower.queue[0];
        if (next !== undefined && next.after <= follower.position) {
          follower.shift();
          for (const event of next.events) {
            if (event.seq <= follower.position) continue;
            follower.position = event.seq;
            if (follower.matches(event)) yield event;
          }
          follower.position = Math.max(follower.position, next.last);
        } else if (follower.position < this.delivered) {
          follower.dropped = false;
          // Up to where the live batches take over.
          const upTo = follower.queue[0]?.after ?? this.delivered;
          const page = await this.repository.read({ after: follower.position, upTo, status: follower.status, limit: this.limits.readBatch });
          for (const event of page) {
            follower.position = event.seq;
            yield event;
          }
          if (page.length < this.limits.readBatch) follower.position = Math.max(follower.position, upTo);
        } else {
          await follower.wait();
        }
      }
      return undefined;
    } finally {
      this.followers.delete(follower.receive);
    }
  }

  /** Stops following the head; followers end when their consumers return. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.reading;
  }
}

/** One follower's place and the live batches it has not taken yet. */
class Follower {
  readonly queue: FeedBatch[] = [];
  private queued = 0;
  /** It fell too far behind: the table has what it dropped. */
  dropped = false;
  stopped = false;
  private wake: (() => void) | undefined;

  constructor(
    public position: number,
    readonly status: PetStatus | undefined,
    private readonly maxQueued: number,
  ) {}

  readonly receive = (batch: FeedBatch): void => {
    if (!this.dropped) {
      this.queue.push(batch);
      this.queued += batch.events.length;
      if (this.queued > this.maxQueued) {
        this.dropped = true;
        this.queue.length = 0;
        this.queued = 0;
      }
    }
    this.wake?.();
  };

  matches(event: PetEvent): boolean {
    return this.status === undefined || event.pet.status === this.status;
  }

  shift(): void {
    this.queued -= this.queue.shift()?.events.length ?? 0;
  }

  /** Resolves at the next batch or stop. */
  wait(): Promise<void> {
    return new Promise<void>((resolve) => (this.wake = resolve));
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
  }
}
