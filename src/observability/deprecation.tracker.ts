import type { Logger } from 'pino';
import type { Metrics } from './metrics.registry';

/**
 * Counts calls of deprecated operations per API key so owners know whom to warn (spec "getPet
 * (deprecated)"); the first call of each key per UTC day also logs one warn line.
 */
export class DeprecationTracker {
  private day = '';
  /** `operation key-id` pairs logged on `day`: bounded by the number of keys. */
  private readonly logged = new Set<string>();

  /** @param today - the current UTC day, YYYY-MM-DD (tests pass their own clock). */
  constructor(
    private readonly metrics: Pick<Metrics, 'countDeprecatedCall'>,
    private readonly log: Pick<Logger, 'warn'>,
    private readonly today: () => string = () => new Date().toISOString().slice(0, 10),
  ) {}

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
