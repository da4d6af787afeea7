import type { KeyChangeAnnouncer, KeyChanges } from './key-changes';
import type { RedisConnections } from '../redis/redis.connections';

/** The pub/sub channel of API key changes under a deployment's Redis namespace (REDIS_NAMESPACE; docs/configuration.md). */
export function keyChangeChannelName(namespace: string): string {
  return `${namespace}api-key-changes`;
}

/** Where the channel reports what it cannot do: the app's logger, or a line on the CLI's stderr. */
export interface KeyChangeLog {
  warn(fields: object, message: string): void;
}

/** What the channel needs of the process's Redis connections (REDIS_URL). */
export type KeyChangeTransport = Pick<RedisConnections, 'publish' | 'listen'>;

/** A message's ids, or null when it is not `{"ids": [<positive integers>]}`. */
function idsOf(message: string): number[] | null {
  try {
    const { ids } = JSON.parse(message) as { ids?: unknown };
    return Array.isArray(ids) && ids.every((id) => Number.isSafeInteger(id) && id > 0) ? (ids as number[]) : null;
  } catch {
    return null;
  }
}

/**
 * The ids of API keys revoked or rolled anywhere, through Redis pub/sub as `{"ids":[…]}` on the channel `name`
 * (RedisConfig.keyChangesChannel: `<REDIS_NAMESPACE>api-key-changes`; docs/api-keys.md "Revocation").
 *
 * - {@link announce} publishes (a process's KeyChanges announces through it: see `announceTo`); the apikey CLI
 *   only publishes.
 * - {@link listen} subscribes a process's KeyChanges: each message makes it forget those keys, so their next use is
 *   looked up (and the streams of the feed hear of it). A message can be missed only while the subscription is down, so
 *   the process forgets every key when the subscription is lost and again each time it is made: no cached key outlives
 *   a missed message.
 *
 * Publishing never fails its caller: the change is stored already; a failure is logged, and other processes then learn
 * of it within API_KEY_CACHE_SECONDS.
 */
export class KeyChangeChannel implements KeyChangeAnnouncer {
  constructor(
    private readonly redis: KeyChangeTransport,
    readonly name: string,
    private readonly log: KeyChangeLog,
  ) {}

  /** Publishes `ids` (nothing for none); resolves once Redis has them, or the failure is logged. */
  async announce(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await this.redis.publish(this.name, JSON.stringify({ ids }));
    } catch (error) {
      this.log.warn({ err: error, channel: this.name, ids }, 'API key change not published: other instances learn it within API_KEY_CACHE_SECONDS');
    }
  }

  /**
   * Subscribes `changes` to the channel, for as long as the Redis connections are open: the process forgets the keys of
   * each message, every key on an unreadable message, and every key when the subscription is lost or made anew.
   */
  listen(changes: KeyChanges): void {
    this.redis.listen(this.name, {
      message: (text) => {
        const ids = idsOf(text);
        if (ids === null) this.log.warn({ channel: this.name }, 'unreadable API key change: every cached key is forgotten');
        changes.forget(ids ?? undefined);
      },
      subscribed: () => changes.forget(),
      lost: () => changes.forget(),
    });
  }
}
