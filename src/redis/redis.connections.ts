import { type Command, Redis, type RedisOptions } from 'ioredis';
import { REDIS_TIMEOUTS } from '../limits';

/**
 * The connection options of every Redis connection of the service: reconnection attempts at most
 * REDIS_TIMEOUTS.reconnectMaxMs apart, so Redis is used again within 2 s of answering again; `extra` overrides.
 */
export function redisConnectionOptions(extra: RedisOptions = {}): RedisOptions {
  return {
    connectTimeout: REDIS_TIMEOUTS.connectMs,
    retryStrategy: (attempt: number) => Math.min(attempt * 100, REDIS_TIMEOUTS.reconnectMaxMs),
    ...extra,
  };
}

/** An ioredis connection that reports each command timing out: the sign of a Redis that stalls with the connection open. */
export class CommandConnection extends Redis {
  onCommandTimeout: () => void = () => undefined;

  override sendCommand(command: Command, ...rest: Parameters<Redis['sendCommand']> extends [Command, ...infer R] ? R : never): unknown {
    const sent = super.sendCommand(command, ...rest);
    // ioredis's own message for commandTimeout (Command.setTimeout); other failures have their events.
    command.promise.catch((error: Error) => {
      if (error.message === 'Command timed out') this.onCommandTimeout();
    });
    return sent;
  }
}

/** What a channel's listener is told: each message, and when messages may have been missed (the subscription lost, or made anew). */
export interface ChannelListener {
  message(text: string): void;
  /** The subscription was made, at start or after a loss: what was published meanwhile was missed. */
  subscribed?(): void;
  /** The subscription was lost: messages are missed until {@link subscribed}. */
  lost?(): void;
}

/** Where the connections report their errors, which every reconnection attempt repeats. */
export interface RedisConnectionsLog {
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/**
 * The Redis connections of one process (`REDIS_URL`), carrying every topic the service keeps there (docs/failures.md
 * "Redis"), as graphql-yoga's redis-event-target carries its topics: one command connection (rate-limit counters and
 * every publish), failing fast while Redis is away (no offline queue, no retry, a command timeout), and one subscriber
 * connection, made at the first {@link listen}, that subscribes every channel again on each reconnection and tells each
 * listener when messages may have been missed.
 */
export class RedisConnections {
  /** Connected by {@link connect} (the health monitor's start). */
  readonly command: CommandConnection;
  private subscriber: Redis | undefined;
  private readonly listeners = new Map<string, ChannelListener>();

  constructor(
    private readonly url: string,
    private readonly log: RedisConnectionsLog,
  ) {
    this.command = new CommandConnection(
      url,
      redisConnectionOptions({
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: REDIS_TIMEOUTS.commandMs,
        // A stalled server never closes its side: a connection given up is destroyed at once, not 2 s later.
        disconnectTimeout: 0,
      }),
    );
    this.command.on('error', (error: Error) => log.debug({ err: error, role: 'command' }, 'Redis connection error'));
  }

  /** Connects the command connection; resolves once connected or failed (within REDIS_TIMEOUTS.connectMs), never rejects. */
  async connect(): Promise<void> {
    await this.command.connect().catch(() => undefined);
  }

  /**
   * Publishes `text` on `channel` through the command connection, connecting it first if nothing has (a CLI that
   * publishes once opens its connection only then).
   * @throws the connection's error at once while Redis is away (nothing is queued).
   */
  async publish(channel: string, text: string): Promise<void> {
    if (this.command.status === 'wait') await this.connect();
    await this.command.publish(channel, text);
  }

  /**
   * Subscribes `listener` to `channel` until {@link close}, one listener per channel; the subscriber connection retries
   * for ever (a subscription is never given up).
   * @throws Error when `channel` has a listener already.
   */
  listen(channel: string, listener: ChannelListener): void {
    if (this.listeners.has(channel)) throw new Error(`${channel} has a listener already`);
    this.listeners.set(channel, listener);
    if (!this.subscriber) this.subscriber = this.openSubscriber();
    else if (this.subscriber.status === 'ready') this.subscribe([channel]);
  }

  private openSubscriber(): Redis {
    // Subscribed by hand on each `ready`, so a listener hears "subscribed" once its subscription is back, not before.
    const subscriber = new Redis(this.url, redisConnectionOptions({ maxRetriesPerRequest: null, autoResubscribe: false }));
    subscriber.on('error', (error: Error) => this.log.debug({ err: error, role: 'subscriber' }, 'Redis connection error'));
    subscriber.on('message', (channel: string, text: string) => this.listeners.get(channel)?.message(text));
    // 'close' comes with every lost connection, whether ioredis reconnects or gives up.
    subscriber.on('close', () => {
      for (const listener of this.listeners.values()) listener.lost?.();
    });
    subscriber.on('ready', () => this.subscribe([...this.listeners.keys()]));
    return subscriber;
  }

  private subscribe(channels: string[]): void {
    const subscriber = this.subscriber!;
    subscriber.subscribe(...channels).then(
      () => {
        for (const channel of channels) this.listeners.get(channel)?.subscribed?.();
      },
      (error: unknown) => {
        this.log.warn({ err: error, channels }, 'Redis: cannot subscribe; reconnecting');
        // A connection that cannot subscribe is useless: dropped, so ioredis reconnects and tries again.
        subscriber.disconnect(true);
      },
    );
  }

  /** Closes both connections; what is being published is sent first when Redis answers. Losing them is no lost subscription. */
  async close(): Promise<void> {
    this.subscriber?.removeAllListeners('close');
    this.subscriber?.disconnect();
    if (this.command.status === 'ready') await this.command.quit().catch(() => this.command.disconnect());
    else this.command.disconnect();
  }
}
