import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';

/** The pino level names, most severe first; `silent` logs nothing (docs/configuration.md, LOG_LEVEL). */
export const LOG_LEVELS = Object.freeze(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const);

/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * The one logger configuration (docs/operations.md "Logs"): JSON lines (pino) at `level`, with the
 * `Authorization` header redacted wherever a request is logged.
 *
 * @param level - the configured level.
 * @param stream - where lines go; standard output by default.
 */
export function createLogger(level: LogLevel, stream?: DestinationStream): Logger {
  const options: LoggerOptions = { level, redact: ['req.headers.authorization'] };
  return stream ? pino(options, stream) : pino(options);
}
