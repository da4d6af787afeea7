import { CommitOutcomeUnknownError, isDatabaseUnavailable } from '../database/database-errors';

/** Every code either surface sends, with its HTTP status (spec "Errors"); Apollo Server's names where it has one. */
export const ERROR_CATALOGUE = {
  BAD_REQUEST: { status: 400, message: 'The request could not be parsed.' },
  BAD_USER_INPUT: { status: 400, message: 'The request holds invalid values.' },
  GRAPHQL_PARSE_FAILED: { status: 400, message: 'The GraphQL document could not be parsed.' },
  GRAPHQL_VALIDATION_FAILED: { status: 400, message: 'The GraphQL document is not valid for this schema.' },
  OPERATION_RESOLUTION_FAILURE: { status: 400, message: 'The operation to run could not be determined.' },
  /** 200: the automatic persisted queries protocol says so. */
  PERSISTED_QUERY_NOT_FOUND: { status: 200, message: 'Persisted query not found: send the full query.' },
  /** 200: the automatic persisted queries protocol says so. */
  PERSISTED_QUERY_NOT_SUPPORTED: { status: 200, message: 'Persisted queries are not supported.' },
  /** A publishable key sent a document instead of a trusted document's id (docs/api-keys.md "Trusted documents"). */
  PERSISTED_QUERY_ID_REQUIRED: { status: 400, message: 'This key runs trusted documents only: send a documentId, not a query.' },
  /** A publishable key sent an id no trusted document manifest holds. */
  PERSISTED_QUERY_NOT_IN_LIST: { status: 400, message: 'No trusted document has this id.' },
  UNAUTHENTICATED: { status: 401, message: 'A valid API key is required: send Authorization: Bearer <API_KEY>.' },
  /** RFC 6750 §3.1 insufficient_scope, or a publishable key used from an origin it does not allow. */
  FORBIDDEN: { status: 403, message: 'This API key is not allowed to do this.' },
  NOT_FOUND: { status: 404, message: 'The requested resource does not exist.' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'The method is not allowed for this resource.' },
  NOT_ACCEPTABLE: { status: 406, message: 'The server cannot answer in a type the Accept header allows.' },
  REQUEST_TIMEOUT: { status: 408, message: 'The request was not received in time.' },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, message: 'A request with this Idempotency-Key is still in progress: retry later.' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is too large.' },
  URI_TOO_LONG: { status: 414, message: 'The request URI is too long.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body must be application/json.' },
  EXPECTATION_FAILED: { status: 417, message: 'The Expect header cannot be met: only 100-continue is supported.' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, message: 'This Idempotency-Key was already used with a different request.' },
  TOO_MANY_REQUESTS: { status: 429, message: 'Too many requests: slow down and retry after Retry-After seconds.' },
  REQUEST_HEADER_FIELDS_TOO_LARGE: { status: 431, message: 'The request headers are too large.' },
  INTERNAL_SERVER_ERROR: { status: 500, message: 'An unexpected error occurred.' },
  /** Database or Redis unavailable; nothing was stored. */
  SERVICE_UNAVAILABLE: { status: 503, message: 'The service is temporarily unavailable: retry shortly.', retryAfterSeconds: 1 },
  /** A create the database never confirmed: it may or may not be stored. */
  GATEWAY_TIMEOUT: {
    status: 504,
    message:
      'The database did not confirm in time whether the pet was stored. Retry with the same Idempotency-Key to get it ' +
      'or store it once; without one, look for it before creating it again.',
  },
} as const satisfies Record<string, { status: number; message: string; retryAfterSeconds?: number }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** The spec's Error body. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  status: number;
}

/** An error the client is meant to see: its message must never hold internals (SQL, stack, key material). */
export class AppError extends Error {
  override readonly name = 'AppError';
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    readonly code: ErrorCode,
    message: string = ERROR_CATALOGUE[code].message,
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    const entry: { status: number; retryAfterSeconds?: number } = ERROR_CATALOGUE[code];
    this.status = entry.status;
    this.headers = entry.retryAfterSeconds === undefined ? headers : { 'Retry-After': String(entry.retryAfterSeconds), ...headers };
  }

  /** The REST body for this error (spec "Error"). */
  toBody(): ErrorBody {
    return { code: this.code, message: this.message, status: this.status };
  }
}

/** The first catalogue code with this error status (BAD_REQUEST for 400), or undefined. */
export function codeForStatus(status: number): ErrorCode | undefined {
  if (status < 400) return undefined;
  return (Object.keys(ERROR_CATALOGUE) as ErrorCode[]).find((code) => ERROR_CATALOGUE[code].status === status);
}

/**
 * Anything thrown as an AppError, and whether it was unexpected (worth logging). Fastify's 4xx
 * keep their status; anything unknown is INTERNAL_SERVER_ERROR, so no internals reach a client.
 */
export function toAppError(error: unknown): { appError: AppError; unexpected: boolean } {
  if (error instanceof AppError) return { appError: error, unexpected: false };
  const status = (error as { statusCode?: unknown } | null)?.statusCode;
  const code = typeof status === 'number' && status < 500 ? codeForStatus(status) : undefined;
  if (code) {
    // Fastify's own messages for these are safe and useful ("Body is not valid JSON…").
    const message = (error as Error).message || undefined;
    return { appError: new AppError(code, message), unexpected: false };
  }
  if (error instanceof CommitOutcomeUnknownError) {
    return { appError: new AppError('GATEWAY_TIMEOUT'), unexpected: true };
  }
  if (isDatabaseUnavailable(error)) {
    return { appError: new AppError('SERVICE_UNAVAILABLE'), unexpected: true };
  }
  return { appError: new AppError('INTERNAL_SERVER_ERROR'), unexpected: true };
}
