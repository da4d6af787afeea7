import type { FastifyRequest } from 'fastify';
import type { Caller } from '../pets/caller';

/** Resolvers see only `caller`; plugins use `request` to charge its rate limit and label its log line. */
export interface GraphqlContext {
  readonly caller: Caller;
  readonly request: FastifyRequest;
}
