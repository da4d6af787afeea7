import type { Logger } from 'pino';
import type { Metrics } from './metrics.registry';

const DAY_MS = 24 * 60 * 60 * 1000;

/** A clock of the current UTC day, YYYY-MM-DD, that formats a date once a day. */
function utcDay(): () => string {
  let day = '';
  let nextDayAt = 0;
  return () => {
    const now = Date.now();
    if (now >= nextDayAt) {
      day = new Date(now).toISOString().slice(0, 10);
      nextDayAt = (Math.floor(now / DAY_MS) + 1) * DAY_MS;
    }
    return day;
  };
}

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
    private readonly today: () => string = utcDay(),
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
