import type { Logger as PinoLogger } from 'pino';
import type { Logger } from 'typeorm';

/**
 * TypeORM's logger as JSON lines (docs/operations.md "Logs"). Slow statements never carry their parameters (pet names, key
 * hashes); statement errors are left to the request that met them.
 */
export class TypeormPinoLogger implements Logger {
  constructor(private readonly output: PinoLogger) {}

  logQuery(): void {}

  logQueryError(): void {}

  logQuerySlow(time: number, query: string): void {
    this.output.warn({ component: 'database', durationMs: time, query }, 'slow database query');
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
