import type { Redis } from 'ioredis';
import { REDIS_TIMEOUTS } from '../limits';
import type { CommandConnection } from '../redis/redis.connections';

/** RATE_LIMIT_ON_REDIS_FAILURE (docs/configuration.md): what the rate limit does while Redis is away. */
export const REDIS_FAILURE_POLICIES = ['serve-local', 'refuse'] as const;
export type RedisFailurePolicy = (typeof REDIS_FAILURE_POLICIES)[number];

/** `connecting`: not answered yet since start; `ok`: answering; `degraded`: away, each instance on its own. */
export type RedisState = 'connecting' | 'ok' | 'degraded';

/** What an observation changes: the new state, and the line to log about it (`lost`, `back`), if any. */
export interface RedisTransition {
  readonly state: RedisState;
  readonly announce: 'lost' | 'back' | null;
}

/**
 * The state machine of Redis's health: `answering` is what a connection or a PING just showed. Only a change of state is
 * announced, so an outage makes one `lost` line and its end one `back` line however many attempts fail in between;
 * the first answer after start is no recovery.
 */
export function nextRedisState(current: RedisState, answering: boolean): RedisTransition {
  if (answering) return { state: 'ok', announce: current === 'degraded' ? 'back' : null };
  return { state: 'degraded', announce: current === 'degraded' ? null : 'lost' };
}

/** Where the monitor says what happened: the app's logger. */
export interface RedisHealthLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
  debug(fields: object, message: string): void;
}

/** Redis's state as `GET /readyz` shows it under `redis` (docs/operations.md "Endpoints"). */
export interface RedisHealthReport {
  readonly state: RedisState;
  /** When it entered that state (ISO 8601). */
  readonly since: string;
  /** RATE_LIMIT_ON_REDIS_FAILURE. */
  readonly onFailure: RedisFailurePolicy;
}

/**
 * The one judge of whether Redis (`REDIS_URL`) answers, shared by the rate limiter, the API key change channel and the
 * change feed (docs/failures.md "Redis"). It watches the process's command connection (RedisConnections.command, which
 * the rate limiter counts on and every publish goes through): `ready` and `close` on it, a command timing out on it, and
 * a PING every REDIS_TIMEOUTS.checkEveryMs, move {@link state}; each change is logged once (a warning when Redis is lost,
 * an info line when it is back).
 *
 * The connection fails fast while disconnected (no offline queue, no retry of a command), so a dead Redis never holds a
 * request; a command or PING that times out on a connection still open (a stalled server) drops it, so the commands
 * after it fail fast too instead of each waiting REDIS_TIMEOUTS.commandMs.
 */
export class RedisHealthMonitor {
  /** The command connection: rate-limit counters and publishes. Connected by {@link start}. */
  readonly client: Redis;
  private current: RedisState = 'connecting';
  private since = new Date();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly firstAnswer: Promise<void>;
  private settleFirst: () => void = () => undefined;

  constructor(
    client: CommandConnection,
    readonly policy: RedisFailurePolicy,
    private readonly log: RedisHealthLog,
  ) {
    this.firstAnswer = new Promise((resolve) => (this.settleFirst = resolve));
    client.onCommandTimeout = () => this.stalled('a command timed out');
    this.client = client;
    this.client.on('ready', () => this.observe(true, 'connected'));
    this.client.on('close', () => this.observe(false, 'connection closed'));
  }

  /**
   * Connects; resolves once Redis has answered or failed once (within REDIS_TIMEOUTS.connectMs, or commandMs for a
   * server that accepts the connection but does not answer), never rejects.
   */
  async start(): Promise<void> {
    this.client.connect().catch((error: unknown) => this.observe(false, (error as Error).message));
    this.timer = setInterval(() => void this.check(), REDIS_TIMEOUTS.checkEveryMs);
    this.timer.unref();
    await this.firstAnswer;
  }

  /** The current state. */
  get state(): RedisState {
    return this.current;
  }

  /** Whether the instance may take traffic as far as Redis goes: always with `serve-local`, only while it answers with `refuse`. */
  get ready(): boolean {
    return this.policy === 'serve-local' || this.current === 'ok';
  }

  /** For `GET /readyz`. */
  report(): RedisHealthReport {
    return { state: this.current, since: this.since.toISOString(), onFailure: this.policy };
  }

  /** Stops checking; no state change is logged after (the connection is its owner's, RedisConnections', to close). */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.settleFirst();
  }

  /**
   * A PING only finds a stall: its timeout reports itself (CommandConnection), a connection lost has its `close`. Only a new
   * connection's `ready` says Redis is back, never an answer on the connection being given up.
   */
  private async check(): Promise<void> {
    if (this.client.status === 'ready') await this.client.ping().catch(() => undefined);
  }

  /** Reconnecting, the client refuses commands at once until Redis answers again. */
  private stalled(reason: string): void {
    if (this.closed || this.client.status !== 'ready') return;
    this.observe(false, reason);
    this.client.disconnect(true);
  }

  private observe(answering: boolean, reason: string): void {
    if (this.closed) return;
    this.settleFirst();
    const { state, announce } = nextRedisState(this.current, answering);
    if (state !== this.current) {
      this.current = state;
      this.since = new Date();
    }
    const fallback =
      this.policy === 'refuse'
        ? 'rate-limited calls answer 503 and /readyz fails until it is back (RATE_LIMIT_ON_REDIS_FAILURE=refuse)'
        : 'each instance counts rate limits alone, revocations wait for the key cache, events for polling';
    if (announce === 'lost') {
      this.log.warn({ redis: this.report(), reason }, `Redis unreachable: ${fallback}`);
    } else if (announce === 'back') {
      this.log.info({ redis: this.report(), reason }, 'Redis answers again: shared rate limits, revocations and event pokes resume');
    }
  }
}
