import type { ApolloServerPlugin } from '@apollo/server';
import { AppError, type ErrorCode } from '../errors/error-catalogue';
import type { GraphqlContext } from './graphql-context';

const UNAVAILABLE: ReadonlySet<unknown> = new Set<ErrorCode>(['SERVICE_UNAVAILABLE', 'GATEWAY_TIMEOUT']);

/**
 * When no root field resolved because the database could not answer, gives the HTTP status REST
 * gives (503 with `Retry-After`, or 504); a partial answer stays 200 (docs/errors.md).
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
