import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type DatabaseBudget, startDatabaseBudget } from '../database/database-deadline';
import type { GuardState } from '../guard/guard';

/** What the logs and metrics say of a GraphQL operation. */
export interface GraphqlOperationSummary {
  /** The client's operation name, if it gave one (logs only: clients choose it freely). */
  name?: string;
  /** `query pets`, `mutation createPet`, `query pet,pets`: bounded by the schema, so fit for metric labels. */
  label: string;
}

/** What one HTTP request carries from hook to hook; written and read through this module's functions only. */
export interface RequestContext {
  /** Started at the request's arrival: the key lookup and every database call after share it (Caller.budget). */
  readonly budget: DatabaseBudget;
  /** What the guard has established; guarded routes only. */
  guard?: GuardState;
  /** The GraphQL operation this request ran, once Apollo has resolved it. */
  graphqlOperation?: GraphqlOperationSummary;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Null on a request answered before its onRequest hooks (a malformed URL). */
    context: RequestContext | null;
  }
  /** What a route declares of itself in its `config`, for the app's hooks to read. */
  interface FastifyContextConfig {
    /** Its 200s get an ETag and answer If-None-Match with 304 (http/conditional-get.hook.ts). */
    conditionalGet?: boolean;
  }
}

/** Gives every request of `app` its context, in an onRequest hook: call it before any hook that uses it. */
export function provideRequestContext(app: FastifyInstance): void {
  app.decorateRequest('context', null);
  app.addHook('onRequest', (request, _reply, done) => {
    contextFor(request);
    done();
  });
}

/** The request's context, made at its first use (the hook above): its database budget starts then. */
function contextFor(request: FastifyRequest): RequestContext {
  return (request.context ??= { budget: startDatabaseBudget(request.id) });
}

/** The request's context; null on a request answered before its onRequest hooks. */
export function contextOf(request: FastifyRequest): Readonly<RequestContext> | null {
  return request.context;
}

/** Starts the guard's state of a request; returns it, for the guard to write as it goes, with the request's budget. */
export function startGuardState(request: FastifyRequest): { state: GuardState; budget: DatabaseBudget } {
  const context = contextFor(request);
  context.guard = {};
  return { state: context.guard, budget: context.budget };
}

/** Notes the GraphQL operation a request runs, for its log line and metrics. */
export function noteGraphqlOperation(request: FastifyRequest, operation: GraphqlOperationSummary): void {
  if (request.context) request.context.graphqlOperation = operation;
}
