import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { LogLevel } from './log-levels';

/** The one logger configuration, to standard output unless `stream` is given (docs/operations.md "Logs"). */
export function createLogger(level: LogLevel, stream?: DestinationStream): Logger {
  const options: LoggerOptions = { level, redact: ['req.headers.authorization'] };
  return stream ? pino(options, stream) : pino(options);
}
