import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import type { Config } from '../config';

/**
 * The one logger configuration (README "Operations"): JSON lines (pino) at `level`, with the
 * `Authorization` header redacted wherever a request is logged.
 *
 * @param level - the configured level.
 * @param stream - where lines go; standard output by default.
 */
export function createLogger(level: Config['logLevel'], stream?: DestinationStream): Logger {
  const options: LoggerOptions = { level, redact: ['req.headers.authorization'] };
  return stream ? pino(options, stream) : pino(options);
}
