import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { FeedLeaseLostError, type PetFeedRepository } from './pet-feed.repository';
import { PET_FEED_LIMITS, type PetFeedLimits } from '../limits';

/**
 * The post-commit sequencer (docs/events.md "How it works"): on the one instance holding the lease, stamps committed pets
 * with their feed positions, every {@link PET_FEED_LIMITS.stampEveryMs} and at once when {@link nudge}d, then calls
 * `onAdvance(head)`. Every instance runs one and claims the lease every {@link PET_FEED_LIMITS.claimEveryMs}: when its
 * holder dies, another takes over within the lease. Database errors are logged and retried at the next tick.
 */
export class FeedSequencer {
  /** This instance's lease holder id. */
  readonly holder = randomUUID();
  private leading = false;
  private stamped = 0;
  private nextClaimAt = 0;
  private timer: NodeJS.Timeout | undefined;
  /** The run in progress; a nudge during it asks for one more. */
  private running: Promise<void> | undefined;
  private again = false;
  /** When the last run began (performance.now()), and the nudge waiting for the gap after it. */
  private lastRunAt = -Infinity;
  private delayed: NodeJS.Timeout | undefined;
  private closed = false;
  /** A pet was stored since the last run began (a nudge of {@link stored}): the next run need not look for one first. */
  private storedSinceRun = false;
  /** Whether the last run failed: a database outage is logged once, when it starts, and once when it ends. */
  private failing = false;

  constructor(
    private readonly feed: PetFeedRepository,
    private readonly onAdvance: (head: number) => void,
    private readonly log: Pick<Logger, 'warn' | 'info'>,
    private readonly limits: PetFeedLimits = PET_FEED_LIMITS,
  ) {}

  /** Whether this instance stamped last (it may have lost the lease since). */
  get isLeader(): boolean {
    return this.leading;
  }

  /** Pets this instance has stamped since it started. */
  get stampedCount(): number {
    return this.stamped;
  }

  /** Starts the ticks; the first runs now. */
  start(): void {
    this.timer = setInterval(() => this.nudge(), this.limits.stampEveryMs);
    this.timer.unref();
    this.nudge();
  }

  /**
   * Stamps soon when this instance leads: after the run in progress, if any, and no sooner than
   * {@link PET_FEED_LIMITS.minStampGapMs} after the previous run began, so that creates close together share one
   * transaction. Never throws.
   */
  nudge(): void {
    if (this.closed || this.delayed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    const wait = this.lastRunAt + this.limits.minStampGapMs - performance.now();
    if (wait > 0) {
      this.delayed = setTimeout(() => {
        this.delayed = undefined;
        this.nudge();
      }, wait);
      return;
    }
    this.lastRunAt = performance.now();
    this.running = this.run().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.nudge();
      }
    });
  }

  /**
   * {@link nudge}, for a pet this process (or, through Redis, another) has just stored and committed: the run it brings
   * stamps without first looking for a pet to stamp.
   */
  stored(): void {
    this.storedSinceRun = true;
    this.nudge();
  }

  private async run(): Promise<void> {
    try {
      if (Date.now() >= this.nextClaimAt) {
        this.nextClaimAt = Date.now() + this.limits.claimEveryMs;
        const leading = await this.feed.claimLease(this.holder, this.limits.leaseSeconds);
        if (leading !== this.leading) this.log.info({ holder: this.holder }, leading ? 'pet feed: this instance sequences' : 'pet feed: lease lost');
        this.leading = leading;
      }
      // A run for a stored pet has one to stamp; a tick looks first, so an idle instance sends no empty transaction.
      const stored = this.storedSinceRun;
      this.storedSinceRun = false;
      if (this.leading && (stored || (await this.feed.hasUnstamped()))) {
        for (;;) {
          const { stamped, head } = await this.feed.stamp(this.holder, this.limits.stampBatch);
          this.stamped += stamped;
          if (stamped > 0) this.onAdvance(head);
          if (stamped < this.limits.stampBatch || this.closed) break;
        }
      }
      if (this.failing) this.log.info('pet feed: sequencing again');
      this.failing = false;
    } catch (error) {
      if (error instanceof FeedLeaseLostError) {
        this.leading = false;
        this.log.info({ holder: this.holder }, 'pet feed: lease lost');
        return;
      }
      if (!this.failing) this.log.warn({ err: error }, 'pet feed: sequencing failed; retrying every tick');
      this.failing = true;
    }
  }

  /** Stops the ticks, waits for the run in progress, and gives the lease up so a successor need not wait for it to run out. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    clearTimeout(this.delayed);
    await this.running;
    if (!this.leading) return;
    this.leading = false;
    await this.feed.releaseLease(this.holder).catch((error: unknown) => this.log.warn({ err: error }, 'pet feed: lease not released'));
  }
}
