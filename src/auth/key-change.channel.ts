import { Redis } from 'ioredis';
import type { KeyChangeAnnouncer, KeyChanges } from './key-changes';
import { REDIS_TIMEOUTS } from '../limits';
import { type RedisHealthMonitor, redisConnectionOptions } from '../observability/redis-health.monitor';

/** The Redis pub/sub channel of API key changes for a deployment's RATE_LIMIT_NAMESPACE (docs/configuration.md). */
export function keyChangeChannelName(namespace: string): string {
  return `${namespace}api-key-changes`;
}

/** Where the channel reports what it cannot do: the app's logger, or a line on the CLI's stderr. */
export interface KeyChangeLog {
  warn(fields: object, message: string): void;
}

/**
 * `REDIS_URL`, and RATE_LIMIT_NAMESPACE, which names the channel (one per deployment sharing a Redis). `redisHealth`
 * (the service's) reports Redis's outages, so the channel's connections log their errors at debug only; the CLI has none.
 */
export interface KeyChangeChannelOptions {
  readonly redisUrl: string;
  readonly namespace: string;
  readonly log: KeyChangeLog;
  readonly redisHealth?: RedisHealthMonitor;
}

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
 * The ids of API keys revoked or rolled anywhere, through Redis pub/sub as `{"ids":[…]}` on
 * {@link keyChangeChannelName} (docs/api-keys.md "Revocation").
 *
 * - {@link announce} publishes (a process's KeyChanges announces through it: see `announceTo`); the apikey CLI
 *   only publishes.
 * - {@link listen} subscribes a process's KeyChanges: each message makes it forget those keys, so their next use is
 *   looked up (and the streams of the feed hear of it). A message can be missed only while the
 *   subscription is down, so the process forgets every key when the subscription is lost (the connection closed) and
 *   again each time it is subscribed anew: no cached key outlives a missed message.
 *
 * Publishing never fails its caller: the change is stored already; a failure is logged, and other processes then learn
 * of it within API_KEY_CACHE_SECONDS.
 */
export class KeyChangeChannel implements KeyChangeAnnouncer {
  /** The pub/sub channel's name. */
  readonly name: string;
  /** Connected at the first announcement, so a process that never publishes opens no connection for it. */
  private readonly publisher: Redis;
  private subscriber: Redis | null = null;

  constructor(private readonly options: KeyChangeChannelOptions) {
    this.name = keyChangeChannelName(options.namespace);
    this.publisher = new Redis(
      options.redisUrl,
      redisConnectionOptions({ lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: REDIS_TIMEOUTS.commandMs }),
    );
    this.reportErrorsOf(this.publisher);
  }

  private reportErrorsOf(connection: Redis): void {
    if (this.options.redisHealth) this.options.redisHealth.watch(connection, 'API key changes');
    else connection.on('error', (error) => this.options.log.warn({ err: error, channel: this.name }, 'API key changes store (Redis) unreachable'));
  }

  /** Publishes `ids` (nothing for none); resolves once Redis has them, or the failure is logged. */
  async announce(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await this.publisher.publish(this.name, JSON.stringify({ ids }));
    } catch (error) {
      this.options.log.warn({ err: error, channel: this.name, ids }, 'API key change not published: other instances learn it within API_KEY_CACHE_SECONDS');
    }
  }

  /**
   * Subscribes `changes` to the channel until {@link close}: the process forgets the keys of each message, every key on
   * an unreadable message, and every key when the subscription is lost or made anew. Once per channel.
   * @throws Error when already listening.
   */
  listen(changes: KeyChanges): void {
    if (this.subscriber) throw new Error('this channel already has a listener');
    // A subscribed connection can do nothing else, hence its own; it retries for ever. Subscribed by hand on each
    // `ready`, so the cache is flushed once the subscription is back, not before.
    const subscriber = new Redis(this.options.redisUrl, redisConnectionOptions({ maxRetriesPerRequest: null, autoResubscribe: false }));
    this.subscriber = subscriber;
    const log = this.options.log;
    this.reportErrorsOf(subscriber);
    subscriber.on('message', (from: string, message: string) => {
      if (from !== this.name) return;
      const ids = idsOf(message);
      if (ids === null) log.warn({ channel: this.name }, 'unreadable API key change: every cached key is forgotten');
      changes.forget(ids ?? undefined);
    });
    // 'close' comes with every lost connection, whether ioredis reconnects ('reconnecting') or gives up ('end').
    subscriber.on('close', () => changes.forget());
    subscriber.on('ready', () => {
      subscriber.subscribe(this.name).then(
        () => changes.forget(),
        (error: unknown) => {
          log.warn({ err: error, channel: this.name }, 'API key changes: cannot subscribe; reconnecting');
          // A connection that cannot subscribe is useless: dropped, so ioredis reconnects and tries again.
          subscriber.disconnect(true);
        },
      );
    });
  }

  /** Unsubscribes and disconnects; what is being published is sent first. */
  async close(): Promise<void> {
    // Its own disconnection is no lost subscription: nothing to forget.
    this.subscriber?.removeAllListeners('close');
    this.subscriber?.disconnect();
    this.subscriber = null;
    if (this.publisher.status === 'ready') await this.publisher.quit();
    else this.publisher.disconnect();
  }
}
