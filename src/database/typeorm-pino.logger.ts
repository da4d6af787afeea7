import type { Logger as PinoLogger } from 'pino';
import type { Logger } from 'typeorm';

/**
 * TypeORM's logger, writing to the service's pino logger (docs/operations.md "Logs": JSON lines
 * only) instead of plain text on standard output. Slow statements (over
 * `DATABASE_DEADLINES.slowQueryMs`) are logged at `warn` with their duration and SQL, never
 * their parameters (pet names, key hashes); driver warnings at `warn`; migrations at `info`.
 * Statement errors are not logged here: the request that met one logs it with its answer.
 */
export class TypeormPinoLogger implements Logger {
  /** @param output - where lines go (each carries `component: "database"`). */
  constructor(private readonly output: PinoLogger) {}

  logQuery(): void {}

  logQueryError(): void {}

  logQuerySlow(time: number, query: string): void {
    this.output.warn({ component: 'database', durationMs: time, query }, 'slow database query');
  }

  logSchemaBuild(message: string): void {
    this.output.debug({ component: 'database' }, message);
  }

  logMigration(message: string): void {
    this.output.info({ component: 'database' }, message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    this.output[level === 'warn' ? 'warn' : 'debug']({ component: 'database' }, String(message));
  }
}
