import type { ApolloServerPlugin } from '@apollo/server';
import { AppError, type ErrorCode } from '../errors/error-catalogue';
import type { GraphqlContext } from './graphql-context';

/** The codes of a database that could not serve the operation (docs/errors.md). */
const UNAVAILABLE: ReadonlySet<unknown> = new Set<ErrorCode>(['SERVICE_UNAVAILABLE', 'GATEWAY_TIMEOUT']);

/**
 * Apollo plugin: an operation of which no root field resolved because the database could not
 * answer gets the HTTP answer REST gives (docs/errors.md), in both response formats: 503 with
 * `Retry-After`, or 504 when a create among them never had its COMMIT confirmed. That is, every
 * error is SERVICE_UNAVAILABLE or GATEWAY_TIMEOUT, and `data` is null or each of its root
 * fields is null with such an error at its path. Otherwise the answer stays 200 with `data`;
 * each such field error carries `extensions.retryAfterSeconds` (graphql-error.formatter.ts).
 *
 * Input: Apollo's `willSendResponse` context (the formatted single result). Output: it may set
 * `response.http.status` and the `Retry-After` header. Throws nothing.
 *
 * @returns the plugin, to register in `plugins` of the ApolloServer.
 */
export function unavailableStatusPlugin(): ApolloServerPlugin<GraphqlContext> {
  return {
    async requestDidStart() {
      return {
        async willSendResponse({ response }) {
          if (response.body.kind !== 'single') return;
          const { data, errors } = response.body.singleResult;
          if (data === undefined || !errors?.length) return;
          const codes = errors.map((error) => error.extensions?.code);
          if (!codes.every((code) => UNAVAILABLE.has(code))) return;
          const failed = new Set(errors.map((error) => error.path?.[0]));
          if (data !== null && !Object.entries(data).every(([field, value]) => value === null && failed.has(field))) return;
          const answer = new AppError(codes.includes('GATEWAY_TIMEOUT') ? 'GATEWAY_TIMEOUT' : 'SERVICE_UNAVAILABLE');
          response.http.status = answer.status;
          for (const [name, value] of Object.entries(answer.headers)) response.http.headers.set(name.toLowerCase(), value);
        },
      };
    },
  };
}
