import { randomUUID } from 'node:crypto';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { Database } from '../database/database';
import { toEventBody } from '../events/pet-event.service';
import { type PetEvent, PetFeedRepository } from '../events/pet-feed.repository';
import type { WebhookEndpoint } from './webhook-endpoint.entity';
import { WebhookEndpointRepository } from './webhook-endpoint.repository';
import { type SignedHeaders, signDelivery } from './webhook-signature';
import { type WebhookTargetRules, WebhookTargetError, checkTarget, checkedLookup } from './webhook-target.policy';
import type { DeliveryOutcome, DisableReason, WebhookMetrics } from './webhook.metrics';
import { WEBHOOK_LIMITS, type WebhookLimits } from '../limits';

/** What a dispatcher needs: the database (endpoints and feed, on the primary), where it may send, and how it reports. */
export interface WebhookDispatcherOptions {
  database: Database;
  rules: WebhookTargetRules;
  /** Seconds before each attempt of one event: 0 for the first (at once), then each retry's delay (WEBHOOK_RETRY_SCHEDULE). */
  retrySchedule: readonly number[];
  log: Pick<Logger, 'warn' | 'info'>;
  metrics?: WebhookMetrics;
  /** WEBHOOK_LIMITS, or shorter ones in tests. */
  limits?: WebhookLimits;
  /**
   * The instance's change feed, which wakes the dispatcher each time it advances (so a delivery leaves within
   * milliseconds of the commit, not at the next claim), and the feed's metrics of every follower, an endpoint being one
   * stream (FeedFollowers.forWebhooks). Without it, the claims alone find new events.
   */
  following?: WebhookFollowing;
}

/** What the dispatcher takes of the instance's feed and its followers' metrics (WebhookDispatcherOptions.following). */
export interface WebhookFollowing {
  onAdvance: (listener: () => void) => () => void;
  opened: () => void;
  closed: () => void;
  delivered: () => void;
}

/** How an attempt ended: delivered, or failed with its outcome and the answer's Retry-After (seconds) on 429 and 503. */
type AttemptResult = { outcome: DeliveryOutcome; retryAfterSeconds?: number; detail: string };

/** The `Retry-After` of an answer (RFC 9110 section 10.2.3: seconds or an HTTP date), in seconds from now, capped. */
function retryAfterSeconds(value: string | string[] | undefined, capSeconds: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  const seconds = /^\d+$/.test(text) ? Number(text) : (Date.parse(text) - Date.now()) / 1000;
  return Number.isNaN(seconds) ? undefined : Math.min(Math.max(seconds, 0), capSeconds);
}

const tracer = trace.getTracer('pet-store-gateway');

/** Whether `error` says a table does not exist (MySQL ER_NO_SUCH_TABLE, SQLite `no such table`): migrations not applied yet. */
function isMissingTable(error: unknown): boolean {
  const driverError = (error as { driverError?: { code?: string } }).driverError;
  return driverError?.code === 'ER_NO_SUCH_TABLE' || /no such table/i.test((error as Error).message ?? '');
}

/** `url` without its query or fragment, which may carry the receiver's own token: what logs and spans may show. */
function shownUrl(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/**
 * Delivers the change feed to the webhook endpoints (docs/webhooks.md). Every instance runs one; every
 * {@link WEBHOOK_LIMITS.claimEveryMs} it renews its leases and claims due endpoints that are behind the feed's head, up to
 * {@link WEBHOOK_LIMITS.maxConcurrentEndpoints} at once, so one instance at a time delivers to an endpoint, and one slow
 * endpoint holds only its own slot. For each it holds, it posts the next matching event after the endpoint's cursor, one
 * at a time: a 2xx moves the cursor on, anything else is retried on the schedule from the database, so a kill or an
 * outage loses nothing (a repeat carries the same `webhook-id`).
 */
export class WebhookDispatcher {
  /** This instance's lease holder id. */
  readonly holder = randomUUID();
  private readonly endpoints: WebhookEndpointRepository;
  private readonly feed: PetFeedRepository;
  private readonly limits: WebhookLimits;
  private readonly agent: Agent;
  private readonly running = new Map<number, Promise<void>>();
  /** Aborts the attempts in flight at close: they are neither successes nor failures, and are made again. */
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private stopWaking: (() => void) | undefined;
  private claiming: Promise<void> | undefined;
  /** Woken while a claim ran: claim again once it ends, so an event that arrived meanwhile is not left to the next tick. */
  private again = false;
  /** The feed's advances so far: a delivery that ends after one it may not have seen claims again. */
  private advances = 0;
  private closing: Promise<void> | undefined;
  /** Whether the last claim failed: a database outage is logged once, when it starts, and once when it ends. */
  private failing = false;
  /** Whether the last claim found no table (DATABASE_MIGRATE_ON_START=false, the migrations not applied yet): logged once. */
  private waitingForTables = false;

  constructor(private readonly options: WebhookDispatcherOptions) {
    this.endpoints = new WebhookEndpointRepository(options.database);
    this.feed = new PetFeedRepository(options.database);
    this.limits = options.limits ?? WEBHOOK_LIMITS;
    // Connections go only to addresses checked when resolved for them (no DNS rebinding between check and connect).
    this.agent = new Agent({
      connect: { lookup: checkedLookup(options.rules), timeout: this.limits.attemptTimeoutMs },
      headersTimeout: this.limits.attemptTimeoutMs,
      bodyTimeout: this.limits.attemptTimeoutMs,
    });
  }

  /** Endpoints this instance is delivering to now. */
  get deliveringTo(): number[] {
    return [...this.running.keys()];
  }

  /** Starts the claims, every `claimEveryMs` and at each advance of the feed; the first runs now. */
  start(): void {
    this.options.log.info({ holder: this.holder }, 'webhooks: this instance delivers');
    this.timer = setInterval(() => this.tick(), this.limits.claimEveryMs);
    this.timer.unref();
    this.stopWaking = this.options.following?.onAdvance(() => {
      this.advances++;
      this.tick(true);
    });
    this.tick();
  }

  /** Claims now, or, when `woken` by the feed while a claim runs, once it ends. */
  private tick(woken = false): void {
    if (this.stopping.signal.aborted) return;
    if (this.claiming) {
      this.again ||= woken;
      return;
    }
    this.claiming = this.claim().finally(() => {
      this.claiming = undefined;
      if (this.again) {
        this.again = false;
        this.tick();
      }
    });
  }

  private async claim(): Promise<void> {
    try {
      const free = this.limits.maxConcurrentEndpoints - this.running.size;
      const held = await this.endpoints.claim(this.holder, this.limits.leaseSeconds, free, new Set(this.running.keys()));
      for (const endpoint of held) {
        if (this.running.size >= this.limits.maxConcurrentEndpoints || this.stopping.signal.aborted) break;
        this.options.following?.opened();
        const advances = this.advances;
        this.running.set(
          endpoint.id,
          this.deliver(endpoint).finally(() => {
            this.running.delete(endpoint.id);
            this.options.following?.closed();
            // The claim of an advance skipped this endpoint while it ran: claim again, or it waits for the next tick.
            if (this.advances !== advances) this.tick(true);
          }),
        );
      }
      if (this.failing || this.waitingForTables) this.options.log.info('webhooks: claiming endpoints again');
      this.failing = false;
      this.waitingForTables = false;
    } catch (error) {
      if (isMissingTable(error)) {
        // Not an outage: another process (a migration Job) has yet to create the tables; claims start once it has.
        if (!this.waitingForTables) this.options.log.info({ reason: (error as Error).message }, 'webhooks: waiting for the migrations to create the tables');
        this.waitingForTables = true;
        return;
      }
      if (!this.failing) this.options.log.warn({ err: error }, 'webhooks: claiming endpoints failed; retrying every tick');
      this.failing = true;
    }
  }

  /**
   * Delivers to the `claimed` endpoint, event after event, until it is caught up, an attempt fails, the lease is lost, the
   * endpoint is disabled or removed, or the dispatcher closes.
   */
  private async deliver(claimed: WebhookEndpoint): Promise<void> {
    const { id } = claimed;
    let cursor = claimed.cursor;
    let attempt = claimed.attempt;
    // The events still to send, read a page at a time up to the head (with the filter they were read with): per event,
    // only the endpoint's read and the cursor's update go to the database, the update while the next event is sent.
    let page: PetEvent[] = [];
    let pageFilter: string | undefined;
    /** The cursor update of the event delivered last, in flight: awaited before any other write of the endpoint's row. */
    let advancing: Promise<boolean> = Promise.resolve(true);
    try {
      while (!this.stopping.signal.aborted) {
        // Read again before each event (by primary key): a rotated secret, a new filter, or the endpoint disabled or
        // removed since the claim applies from the next event, not after a long catch-up.
        const endpoint = await this.endpoints.get(id);
        if (!endpoint || endpoint.state !== 'enabled') return;
        const filter = endpoint.status ?? undefined;
        if (page.length === 0 || filter !== pageFilter) {
          const head = await this.endpoints.head();
          page = await this.feed.read({ after: cursor, limit: this.limits.eventsPerRead, status: filter, upTo: head });
          pageFilter = filter;
          if (page.length === 0) {
            // Nothing up to the head matches the filter: skip there, so the endpoint is not claimed again for those.
            if (head > cursor && (await advancing)) await this.endpoints.advance(id, this.holder, head, false);
            return;
          }
        }
        const event = page[0];
        const body = JSON.stringify(toEventBody(event));
        const headers = signDelivery(endpoint.secrets, event.cursor, new Date(), body);
        if (headers['webhook-signature'] === '') {
          // Rotation always leaves a secret without expiry, so this is a bug: send nothing unsigned, and read again at the next claim.
          this.options.log.warn({ endpoint: id }, `webhooks: endpoint ${id} has no valid signing secret; nothing sent`);
          return;
        }
        const result = await this.attempt(endpoint, body, headers);
        if (this.stopping.signal.aborted) return;
        if (result.outcome === 'success') {
          this.options.following?.delivered();
          // The lease was lost before the previous update: stop; whoever holds it now repeats this event (same webhook-id).
          if (!(await advancing)) return;
          advancing = this.endpoints.advance(id, this.holder, event.seq, true);
          // Handled where it is awaited; marked now, so a failure before then is not an unhandled rejection.
          advancing.catch(() => undefined);
          cursor = event.seq;
          attempt = 0;
          page.shift();
          continue;
        }
        if (!(await advancing)) return;
        const next = attempt + 1;
        const disable: DisableReason | null = result.outcome === 'gone' ? 'gone' : next >= this.options.retrySchedule.length ? 'retries_exhausted' : null;
        if (disable) {
          if (await this.endpoints.recordFailure(id, this.holder, { disable: disable === 'gone' ? 'gone' : 'retries exhausted' })) {
            this.options.metrics?.countDisabled(disable);
            this.options.log.warn(
              { endpoint: id, url: shownUrl(new URL(endpoint.url)), reason: disable, attempts: next, eventId: event.cursor, lastError: result.detail },
              `webhooks: endpoint ${id} disabled (${disable === 'gone' ? 'it answered 410 Gone' : `${next} attempts failed`}); npm run webhook -- enable ${id} resumes it`,
            );
          }
          return;
        }
        const retryInSeconds = Math.max(this.options.retrySchedule[next], result.retryAfterSeconds ?? 0);
        await this.endpoints.recordFailure(id, this.holder, { retryInSeconds });
        return;
      }
    } catch (error) {
      this.options.log.warn({ err: error, endpoint: id }, 'webhooks: delivery interrupted by the database; the endpoint is claimed again later');
    } finally {
      await advancing.catch((error: unknown) =>
        this.options.log.warn({ err: error, endpoint: id }, 'webhooks: cursor update interrupted by the database; the event is sent again later'),
      );
      await this.endpoints.release(this.holder, id).catch(() => undefined);
    }
  }

  /** One POST of an event's `body`, `signed`, to `endpoint`, in a span of its own (OpenTelemetry HTTP client conventions). */
  private attempt(endpoint: WebhookEndpoint, body: string, signed: SignedHeaders): Promise<AttemptResult> {
    const url = new URL(endpoint.url);
    const attributes = {
      'http.request.method': 'POST',
      'url.full': shownUrl(url),
      'server.address': url.hostname,
      'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
      'petstore.webhook.endpoint': endpoint.id,
    };
    return tracer.startActiveSpan('POST', { kind: SpanKind.CLIENT, attributes }, async (span) => {
      const started = performance.now();
      const result = await this.post(url, body, signed);
      span.setAttribute('petstore.webhook.outcome', result.outcome);
      if (result.outcome !== 'success') {
        span.setAttribute('error.type', result.detail);
        span.setStatus({ code: SpanStatusCode.ERROR, message: result.detail });
      }
      if (/^\d{3}$/.test(result.detail)) span.setAttribute('http.response.status_code', Number(result.detail));
      span.end();
      if (!this.stopping.signal.aborted) this.options.metrics?.observeAttempt(result.outcome, (performance.now() - started) / 1000);
      return result;
    });
  }

  private async post(url: URL, body: string, signed: SignedHeaders): Promise<AttemptResult> {
    const timeout = AbortSignal.timeout(this.limits.attemptTimeoutMs);
    try {
      // Also here for an address in the URL itself, which no lookup sees.
      await checkTarget(url, this.options.rules);
      const response = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        signal: AbortSignal.any([timeout, this.stopping.signal]),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'pet-store-gateway-webhooks',
          ...signed,
        },
        body,
      });
      // Read and dropped, bounded: a huge answer closes the connection.
      await response.body.dump({ limit: this.limits.responseBodyBytes }).catch(() => undefined);
      const status = response.statusCode;
      const detail = String(status);
      if (status >= 200 && status < 300) return { outcome: 'success', detail };
      if (status === 410) return { outcome: 'gone', detail };
      const retryAfter = status === 429 || status === 503 ? retryAfterSeconds(response.headers['retry-after'], this.limits.maxRetryAfterSeconds) : undefined;
      return { outcome: 'http_error', detail, ...(retryAfter !== undefined && { retryAfterSeconds: retryAfter }) };
    } catch (error) {
      if (error instanceof WebhookTargetError || (error as Error).cause instanceof WebhookTargetError) {
        return { outcome: 'refused_target', detail: 'refused_target' };
      }
      if (timeout.aborted) return { outcome: 'timeout', detail: 'timeout' };
      return { outcome: 'network_error', detail: (error as NodeJS.ErrnoException).code ?? (error as Error).name };
    }
  }

  /** Stops claiming, cuts the attempts in flight (made again later, with the same webhook-id) and gives every lease up; once. */
  close(): Promise<void> {
    return (this.closing ??= this.stop());
  }

  private async stop(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.timer);
    this.stopWaking?.();
    await this.claiming;
    await Promise.all(this.running.values());
    await this.endpoints.release(this.holder).catch((error: unknown) => this.options.log.warn({ err: error }, 'webhooks: leases not released'));
    await this.agent.close();
  }
}
