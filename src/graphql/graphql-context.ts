import type { FastifyRequest } from 'fastify';
import type { Caller } from '../pets/caller';

/**
 * The one context of every GraphQL operation, made per request by the `/graphql` route: the
 * resolvers see only `caller`; Apollo plugins (cost limit, operation summary) also reach the
 * HTTP request, to charge its rate limit and label its log line.
 */
export interface GraphqlContext {
  /** Who is calling, as the guard established it. */
  readonly caller: Caller;
  /** The HTTP request that carried the operation. */
  readonly request: FastifyRequest;
}
