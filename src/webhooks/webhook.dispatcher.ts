import { randomUUID } from 'node:crypto';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { EntityManager } from 'typeorm';
import type { Database } from '../database/database';
import { withinDeadline } from '../database/database-deadline';
import { toEventBody } from '../events/pet-event.service';
import { type PetEvent, PetFeedRepository } from '../events/pet-feed.repository';
import type { AttemptTrigger } from './webhook-attempt.entity';
import { type AttemptRecord, WebhookAttemptRepository } from './webhook-attempt.repository';
import type { WebhookEndpoint } from './webhook-endpoint.entity';
import { type ClaimedEndpoint, WebhookEndpointRepository } from './webhook-endpoint.repository';
import type { WebhookRecovery } from './webhook-recovery.entity';
import { WebhookResendRepository } from './webhook-resend.repository';
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

/**
 * How an attempt ended: delivered, or failed with its outcome and the answer's Retry-After (seconds) on 429 and 503; with
 * the answer's status and first bytes when there was one, or the error class (`detail`) when not.
 */
type AttemptResult = { outcome: DeliveryOutcome; retryAfterSeconds?: number; detail: string; status?: number; body?: string };

/** An attempt made: its result, and its row for `webhook_attempt` (docs/admin.md "Delivery attempts"). */
type Attempted = { result: AttemptResult; record: AttemptRecord };

/** Reads up to `limit` bytes of `body` (the rest is dropped: past it the connection closes); keeps the first `keep` as UTF-8 text. */
async function readAnswer(body: AsyncIterable<Buffer> & { destroy: () => unknown }, keep: number, limit: number): Promise<string> {
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let read = 0;
  try {
    for await (const chunk of body) {
      if (keptBytes < keep) {
        const part = chunk.subarray(0, keep - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      read += chunk.length;
      if (read > limit) {
        body.destroy();
        break;
      }
    }
  } catch {
    // A body cut or too slow: the status is the attempt's outcome all the same.
  }
  // A character cut at the bound becomes U+FFFD, as any invalid byte.
  return new TextDecoder().decode(Buffer.concat(kept));
}

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
  private readonly attempts: WebhookAttemptRepository;
  private readonly resends: WebhookResendRepository;
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
    this.attempts = new WebhookAttemptRepository(options.database);
    this.resends = new WebhookResendRepository(options.database);
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
      for (const claimed of held) {
        if (this.running.size >= this.limits.maxConcurrentEndpoints || this.stopping.signal.aborted) break;
        const { endpoint } = claimed;
        this.options.following?.opened();
        const advances = this.advances;
        this.running.set(
          endpoint.id,
          this.deliver(claimed).finally(() => {
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
   * Makes the `claimed` endpoint's queued resends first (redeliveries, then a pass of its recoveries), then, when it is
   * due, delivers its feed, event after event, until it is caught up, an attempt fails, the lease is lost, the endpoint
   * is disabled or removed, or the dispatcher closes.
   */
  private async deliver({ endpoint: claimed, due, resend }: ClaimedEndpoint): Promise<void> {
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
      if (resend) {
        const { moved, lost } = await this.resend(claimed);
        if (lost) return;
        if (moved !== undefined) {
          // A recovery delivered the event the feed's stream was retrying: the stream goes on after it, now.
          cursor = moved;
          attempt = 0;
          due = true;
        }
      }
      if (!due) return;
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
        const attempted = await this.send(endpoint, event, 'delivery', attempt + 1);
        if (!attempted || this.stopping.signal.aborted) return;
        const { result, record } = attempted;
        const recordIt = (manager: EntityManager) => this.attempts.insert(manager, record);
        if (result.outcome === 'success') {
          this.options.following?.delivered();
          // The lease was lost before the previous update: stop; whoever holds it now repeats this event (same webhook-id).
          if (!(await advancing)) return void (await this.recordAlone(record));
          // The attempt's row rides along with the cursor's update: one transaction, written while the next event is sent.
          advancing = this.endpoints.advance(id, this.holder, event.seq, true, recordIt);
          // Handled where it is awaited; marked now, so a failure before then is not an unhandled rejection.
          advancing.catch(() => undefined);
          cursor = event.seq;
          attempt = 0;
          page.shift();
          continue;
        }
        if (!(await advancing)) return void (await this.recordAlone(record));
        const next = attempt + 1;
        const disable: DisableReason | null = result.outcome === 'gone' ? 'gone' : next >= this.options.retrySchedule.length ? 'retries_exhausted' : null;
        if (disable) {
          if (await this.endpoints.recordFailure(id, this.holder, { disable: disable === 'gone' ? 'gone' : 'retries exhausted' }, recordIt)) {
            this.options.metrics?.countDisabled(disable);
            this.options.log.warn(
              { endpoint: id, url: shownUrl(new URL(endpoint.url)), reason: disable, attempts: next, eventId: event.cursor, lastError: result.detail },
              `webhooks: endpoint ${id} disabled (${disable === 'gone' ? 'it answered 410 Gone' : `${next} attempts failed`}); npm run webhook -- enable ${id} resumes it`,
            );
          }
          return;
        }
        const retryInSeconds = Math.max(this.options.retrySchedule[next], result.retryAfterSeconds ?? 0);
        await this.endpoints.recordFailure(id, this.holder, { retryInSeconds }, recordIt);
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

  /**
   * Signs `event` with `endpoint`'s secrets and POSTs it once ({@link attempt}), as attempt number `attempt` of `trigger`.
   * @returns the result and the attempt's row to record; undefined when no secret is valid (nothing is sent unsigned).
   */
  private async send(endpoint: WebhookEndpoint, event: PetEvent, trigger: AttemptTrigger, attempt: number): Promise<Attempted | undefined> {
    const body = JSON.stringify(toEventBody(event));
    const startedAt = new Date();
    const headers = signDelivery(endpoint.secrets, event.cursor, startedAt, body);
    if (headers['webhook-signature'] === '') {
      // Rotation always leaves a secret without expiry, so this is a bug: send nothing unsigned, and read again at the next claim.
      this.options.log.warn({ endpoint: endpoint.id }, `webhooks: endpoint ${endpoint.id} has no valid signing secret; nothing sent`);
      return undefined;
    }
    const started = performance.now();
    const result = await this.attempt(endpoint, body, headers);
    const record: AttemptRecord = {
      endpointId: endpoint.id,
      eventSeq: event.seq,
      attempt,
      trigger,
      startedAt,
      durationMs: Math.round(performance.now() - started),
      statusCode: result.status ?? null,
      error: result.status === undefined ? result.detail.slice(0, 64) : null,
      responseBody: result.body ?? null,
    };
    return { result, record };
  }

  /** Records an attempt in a statement of its own (its effect was not recorded: the lease was lost). */
  private async recordAlone(record: AttemptRecord): Promise<void> {
    await withinDeadline(this.options.database, (manager) => this.attempts.insert(manager, record));
  }

  /**
   * Makes the resends queued for `endpoint` (docs/admin.md "Redelivery", "Recovery"): every redelivery, one attempt each,
   * then up to WebhookLimits.resendsPerPass events of its recoveries, oldest recovery first; what remains waits for the
   * next pass (the claim finds it), so the endpoint's feed is not held back for long. Each resend is recorded with its
   * queue's change while this instance still holds the endpoint's lease; once it is lost, the resend in flight is
   * recorded as made (a redelivery leaves the queue; a recovery's cursor stays, for the holder to move) and the pass stops.
   * @returns `moved`: the event the feed's stream was retrying when a recovery just delivered it (the cursor moved past
   *   it); `lost`: the lease was lost, and the endpoint is another instance's now.
   * @throws DatabaseDeadlineError.
   */
  private async resend(endpoint: WebhookEndpoint): Promise<{ moved?: number; lost?: true }> {
    for (const redelivery of await this.resends.redeliveries(endpoint.id, this.limits.resendsPerPass)) {
      if (this.stopping.signal.aborted) return {};
      const [event] = await this.feed.read({ after: redelivery.eventSeq - 1, limit: 1, upTo: redelivery.eventSeq });
      const attempted = event && (await this.send(endpoint, event, 'redelivery', 1));
      if (this.stopping.signal.aborted) return {};
      const record = async (manager: EntityManager) => {
        if (attempted) await this.attempts.insert(manager, attempted.record);
        await this.resends.redelivered(manager, redelivery.id);
      };
      if (!(await this.endpoints.whileLeased(endpoint.id, this.holder, record))) {
        await withinDeadline(this.options.database, record, { transaction: true });
        return { lost: true };
      }
    }
    let budget = this.limits.resendsPerPass;
    let moved: number | undefined;
    for (const recovery of await this.resends.activeRecoveries(endpoint.id)) {
      const result = await this.recover(endpoint, recovery, budget);
      if (result.lost) return result;
      budget -= result.handled;
      moved = result.moved ?? moved;
      if (budget <= 0 || this.stopping.signal.aborted) break;
    }
    return { moved };
  }

  /**
   * Works `recovery` of `endpoint` for up to `budget` events, after its cursor: each event whose last attempt failed is
   * resent once, its attempt recorded with the recovery's cursor and counts in one transaction; the recovery is `done`
   * when none remains. When the event the feed's stream is retrying is delivered so, the endpoint's cursor moves past it.
   * @returns how many events it handled (resent or passed over), that event's position when it moved the cursor, and
   *   `lost` when the lease was lost (see {@link resend}).
   * @throws DatabaseDeadlineError.
   */
  private async recover(endpoint: WebhookEndpoint, recovery: WebhookRecovery, budget: number): Promise<{ handled: number; moved?: number; lost?: true }> {
    const query = { endpointId: endpoint.id, after: recovery.cursor, upTo: recovery.upToSeq, since: recovery.since };
    const remaining = await this.attempts.countFailedEvents(query);
    await this.resends.startRecovery(recovery.id, recovery.sent + recovery.failed + remaining);
    // The stream retries the event of its last attempt while `attempt` counts failures of it.
    const retrying = endpoint.attempt > 0 ? await this.attempts.lastDeliveryEvent(endpoint.id) : undefined;
    const filter = endpoint.status ?? undefined;
    let handled = 0;
    let moved: number | undefined;
    const seqs = await this.attempts.failedEvents(query, budget);
    for (const seq of seqs) {
      if (this.stopping.signal.aborted) return { handled, moved };
      const [event] = await this.feed.read({ after: seq - 1, limit: 1, upTo: seq, status: filter });
      const attempted = event && (await this.send(endpoint, event, 'recovery', 1));
      if (this.stopping.signal.aborted) return { handled, moved };
      if (event && !attempted) {
        await this.resends.finishRecovery(recovery.id, { state: 'failed', reason: 'the endpoint has no valid signing secret' });
        return { handled, moved };
      }
      const ok = attempted?.result.outcome === 'success';
      const recorded = await this.endpoints.whileLeased(endpoint.id, this.holder, async (manager) => {
        if (attempted) await this.attempts.insert(manager, attempted.record);
        // An event that no longer matches the endpoint's filter is passed over, and not counted.
        await this.resends.stepRecovery(manager, recovery.id, seq, attempted ? (ok ? 'sent' : 'failed') : 'skipped');
      });
      if (!recorded) {
        if (attempted) await this.recordAlone(attempted.record);
        return { handled, moved, lost: true };
      }
      handled++;
      if (ok && seq === retrying && seq > endpoint.cursor && (await this.endpoints.advance(endpoint.id, this.holder, seq, true))) moved = seq;
    }
    if (seqs.length < budget) await this.resends.finishRecovery(recovery.id, { state: 'done' });
    return { handled, moved };
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
      // Read, bounded: the first bytes are kept with the attempt, the rest dropped; a huge answer closes the connection.
      const answer = await readAnswer(response.body, this.limits.attemptBodyBytes, this.limits.responseBodyBytes);
      const status = response.statusCode;
      const detail = String(status);
      if (status >= 200 && status < 300) return { outcome: 'success', detail, status, body: answer };
      if (status === 410) return { outcome: 'gone', detail, status, body: answer };
      const retryAfter = status === 429 || status === 503 ? retryAfterSeconds(response.headers['retry-after'], this.limits.maxRetryAfterSeconds) : undefined;
      return { outcome: 'http_error', detail, status, body: answer, ...(retryAfter !== undefined && { retryAfterSeconds: retryAfter }) };
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
