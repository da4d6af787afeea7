import type { Logger as PinoLogger } from 'pino';
import type { Logger, QueryRunner } from 'typeorm';

/**
 * TypeORM's logger as JSON lines (docs/operations.md "Logs"). Slow statements never carry their parameters (pet names, key
 * hashes) but carry the request id their call was made for (withinDeadline writes it on the query runner, see
 * {@link requestIdOfRunner}), and with tracing on the trace and span ids (pino's instrumentation); statement errors are
 * left to the request that met them.
 */
export class TypeormPinoLogger implements Logger {
  constructor(private readonly output: PinoLogger) {}

  logQuery(): void {}

  logQueryError(): void {}

  logQuerySlow(time: number, query: string, _parameters?: unknown, queryRunner?: QueryRunner): void {
    this.output.warn({ component: 'database', durationMs: time, query, requestId: requestIdOfRunner(queryRunner) }, 'slow database query');
  }

  logSchemaBuild(message: string): void {
    this.output.debug({ component: 'database' }, message);
  }

  /** TypeORM says only a migration's failure here; openDatabase logs each applied migration at info itself. */
  logMigration(message: string): void {
    this.output.error({ component: 'database' }, message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    this.output[level === 'warn' ? 'warn' : 'debug']({ component: 'database' }, String(message));
  }
}

/** The request a query runner works for, as DatabaseNode.call noted it in the runner's `data`; null for work outside a request. */
export function requestIdOfRunner(queryRunner: QueryRunner | undefined): string | null {
  const requestId: unknown = queryRunner?.data?.requestId;
  return typeof requestId === 'string' ? requestId : null;
}
