import { EventEmitter } from 'node:events';

/**
 * Where a process announces the keys it changed (revoked, or their expiry moved by a roll), so that other processes
 * forget them (docs/api-keys.md "Revocation"): KeyChangeChannel, through Redis.
 */
export interface KeyChangeAnnouncer {
  /** Tells the other processes to forget keys `ids`; resolves once sent, and never rejects (a failure is the announcer's to log). */
  announce(ids: readonly number[]): Promise<void>;
}

/** Called with the ids of the keys forgotten; undefined: every key. */
export type ForgetListener = (ids: readonly number[] | undefined) => void;

/**
 * The changes of API keys this process must act on (docs/api-keys.md "Revocation"): those made here ({@link changed}:
 * forgotten here at once, then announced to the other processes), and those heard from elsewhere ({@link forget}). Whoever
 * holds keys beyond a request listens ({@link onForget}): the key cache (ApiKeyAuthenticator) and the open streams
 * (FeedFollowers).
 */
export class KeyChanges {
  private readonly listeners = new EventEmitter<{ forget: [readonly number[] | undefined] }>();
  private announcer: KeyChangeAnnouncer | null = null;

  /** Announces, from now on, every change made here to `announcer` (KeyChangeChannel with Redis); null stops it. */
  announceTo(announcer: KeyChangeAnnouncer | null): void {
    this.announcer = announcer;
  }

  /** Calls `listener` at each change, with its ids (undefined: every key), until the returned function is called; in the order listened. */
  onForget(listener: ForgetListener): () => void {
    this.listeners.on('forget', listener);
    return () => void this.listeners.off('forget', listener);
  }

  /** Keys `ids` changed in this process: forgotten here at once, then announced; resolves once announced (never rejects). */
  async changed(ids: readonly number[]): Promise<void> {
    this.forget(ids);
    if (ids.length > 0) await this.announcer?.announce(ids);
  }

  /** Keys `ids` changed elsewhere (announced), or, with no ids, every key (the channel that announces changes was lost). */
  forget(ids?: readonly number[]): void {
    this.listeners.emit('forget', ids);
  }
}
