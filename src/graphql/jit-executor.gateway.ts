import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import {
  type DocumentNode,
  type ExecutionResult,
  GraphQLError,
  GraphQLIncludeDirective,
  type GraphQLSchema,
  GraphQLSkipDirective,
  Kind,
  execute,
  getVariableValues,
  visit,
} from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { byteBoundedLru, compiledOperationBytes } from './document-cache';

/** Why an operation runs on graphql-js instead of its compiled form: graphql-jit's first error. */
export type JitFallback = { operationName: string | null; reason: string };

/**
 * A graphql-jit error as a graphql-js one: Apollo's plugins (GraphQL Armor's suggestion
 * blocker rewrites `message`) and error formatting expect a real GraphQLError, whose fields are
 * writable; jit's are not. Keeps message, path, locations, the original error and extensions.
 */
function asGraphqlJsError(error: GraphQLError): GraphQLError {
  const rebuilt = new GraphQLError(error.message, { path: error.path, originalError: error.originalError ?? undefined, extensions: error.extensions });
  if (error.locations) Object.defineProperty(rebuilt, 'locations', { value: error.locations, enumerable: true, writable: true });
  return rebuilt;
}

/**
 * Whether a `@skip` or `@include` of the document takes its `if` from a variable that is null
 * or not given: graphql-js refuses such an operation ("Argument "if" of non-null type
 * "Boolean!" must not be null."), as the GraphQL spec's CoerceArgumentValues says.
 */
function hasUnreadableCondition(document: DocumentNode, variables: Record<string, unknown>): boolean {
  let unreadable = false;
  visit(document, {
    Directive(node) {
      if (node.name.value !== GraphQLSkipDirective.name && node.name.value !== GraphQLIncludeDirective.name) return;
      const condition = node.arguments?.find((argument) => argument.name.value === 'if')?.value;
      if (condition?.kind === Kind.VARIABLE && variables[condition.name.value] == null) unreadable = true;
    },
  });
  return unreadable;
}

/**
 * An error graphql-js raised itself while executing (an argument that does not coerce: a
 * GraphQLError with no code, maybe located at a field), coded as the client's input; any other
 * error is returned as it is.
 */
function asBadUserInput(error: GraphQLError): GraphQLError {
  const raised = error.originalError ?? error;
  if (!(raised instanceof GraphQLError) || raised.extensions.code !== undefined) return error;
  return new GraphQLError(error.message, { nodes: error.nodes, path: error.path, extensions: { code: 'BAD_USER_INPUT' } });
}

/**
 * Apollo Server 5 executes through a gateway's executor when it is given one: this gateway
 * serves one fixed schema and runs each operation compiled by graphql-jit (bench/README.md
 * "What makes it fast"). Everything before execution stays Apollo's: parsing, the document cache,
 * validation (Armor's rules included) and the plugin hooks; only execution changes.
 * - Each (document, operation name) is compiled once, kept in an LRU of `maxBytes`, each
 *   weighed with the document it keeps and its generated code (compiledOperationBytes).
 * - Variables are coerced by graphql-js first, exactly as without the gateway (defaults,
 *   errors with their locations, one error where graphql-js gives one), and jit gets the
 *   coerced values (idempotent for this schema's ID, SafeInt, String, Int and enum inputs).
 * - An operation jit cannot compile runs on graphql-js's `execute`, and `onFallback` is told why;
 *   so does one whose `@skip`/`@include` condition is a null variable, which jit would read as
 *   false: graphql-js refuses it, and that error is coded BAD_USER_INPUT;
 *   a request naming no operation of its document goes to `execute` too, which reports it.
 * - Errors come back as graphql-js GraphQLErrors, so formatting is unchanged.
 *
 * @param schema - the executable schema (resolvers attached).
 * @param options.maxBytes - the LRU's budget in bytes (DOCUMENT_CACHE_LIMITS.compiledOperationBytes).
 * @param options.onFallback - called once per operation that could not be compiled.
 * @returns the object for ApolloServer's `gateway` option (pass no `schema` beside it).
 */
export function jitExecutorGateway(schema: GraphQLSchema, options: { maxBytes: number; onFallback: (fallback: JitFallback) => void }): GatewayInterface {
  // `query` undefined: jit could not compile it, and it runs on graphql-js. `bytes`: what the entry keeps alive.
  const compiled = byteBoundedLru<{ query: CompiledQuery | undefined; bytes: number }>(options.maxBytes, ({ bytes }) => bytes);

  const executor: GatewayExecutor = async ({ document, operation, operationName, queryHash, request, context }) => {
    // No operation by the requested name (or no name among several): graphql-js says so, and
    // Apollo answers OPERATION_RESOLUTION_FAILURE. `operationName` here is the resolved one (null
    // then), so the client's is passed. Nothing to compile, nothing cached.
    if (!operation) return execute({ schema, document, operationName: request.operationName, contextValue: context, variableValues: request.variables });
    const key = `${queryHash}\u0000${operationName ?? ''}`;
    let entry = compiled.get(key);
    if (entry === undefined) {
      const result = compileQuery(schema, document, operationName ?? undefined);
      if (isCompiledQuery(result)) entry = { query: result, bytes: compiledOperationBytes(document, operation) };
      else {
        entry = { query: undefined, bytes: 0 };
        options.onFallback({ operationName, reason: result.errors?.[0]?.message ?? 'unknown' });
      }
      compiled.set(key, entry);
    }
    const { query } = entry;
    if (query === undefined) {
      return execute({ schema, document, operationName, contextValue: context, variableValues: request.variables });
    }
    const variables = getVariableValues(schema, operation.variableDefinitions ?? [], request.variables ?? {});
    if (variables.errors) return { errors: variables.errors };
    if (hasUnreadableCondition(document, variables.coerced)) {
      // jit would take a null `if` as false; graphql-js refuses it, the client's mistake.
      const result = await execute({ schema, document, operationName, contextValue: context, variableValues: request.variables });
      return { ...result, errors: result.errors?.map(asBadUserInput) };
    }
    const result: ExecutionResult = await query.query(undefined, context, variables.coerced);
    return result.errors ? { ...result, errors: result.errors.map(asGraphqlJsError) } : result;
  };

  return {
    // Apollo subscribes before load() and needs the schema by the time load() resolves.
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => undefined;
    },
    load: async () => ({ executor }),
    stop: async () => undefined,
  };
}
