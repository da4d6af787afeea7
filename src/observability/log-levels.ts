/**
 * The pino level names, most severe first; `silent` logs nothing (docs/configuration.md, LOG_LEVEL). Apart from the
 * logger, so reading the configuration requires no pino: pino is required after the tracing SDK, which patches it.
 */
export const LOG_LEVELS = Object.freeze(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const);

export type LogLevel = (typeof LOG_LEVELS)[number];
