import type { Logger } from 'pino';
import type { Metrics } from './metrics.registry';

/**
 * Counts calls of deprecated operations per API key (spec "getPet (deprecated)": removed on
 * 2030-12-05), so owners know whom to warn: every call increments
 * `petstore_deprecated_calls_total{operation, api_key_id}`, and the first call of each key on
 * each UTC day writes one warn log line `deprecated operation called`.
 */
export class DeprecationTracker {
  /** The UTC day (YYYY-MM-DD) of `logged`. */
  private day = '';
  /** `operation key-id` pairs logged on `day`: bounded by the number of keys. */
  private readonly logged = new Set<string>();

  /**
   * @param metrics - where calls are counted.
   * @param log - where the daily line goes.
   * @param today - the current UTC day (tests pass their own clock).
   */
  constructor(
    private readonly metrics: Pick<Metrics, 'countDeprecatedCall'>,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly today: () => string = () => new Date().toISOString().slice(0, 10),
  ) {}

  /**
   * @param operation - the deprecated operation's name (`getPet`).
   * @param apiKeyId - the caller's API key id; unauthenticated calls never get this far.
   */
  record(operation: string, apiKeyId: number): void {
    this.metrics.countDeprecatedCall(operation, apiKeyId);
    const today = this.today();
    if (today !== this.day) {
      this.day = today;
      this.logged.clear();
    }
    const seen = `${operation} ${apiKeyId}`;
    if (this.logged.has(seen)) return;
    this.logged.add(seen);
    this.log.warn({ operation, apiKeyId }, 'deprecated operation called');
  }
}
