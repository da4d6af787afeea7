import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

/** The pino level names, most severe first; `silent` logs nothing (docs/configuration.md, LOG_LEVEL). */
export const LOG_LEVELS = Object.freeze(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const);

export type LogLevel = (typeof LOG_LEVELS)[number];

/** The one logger configuration, to standard output unless `stream` is given (docs/operations.md "Logs"). */
export function createLogger(level: LogLevel, stream?: DestinationStream): Logger {
  const options: LoggerOptions = { level, redact: ['req.headers.authorization'] };
  return stream ? pino(options, stream) : pino(options);
}
