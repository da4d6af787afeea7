import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import { SpanStatusCode, trace } from '@opentelemetry/api';
import { type DocumentNode, type ExecutionResult, GraphQLError, type GraphQLSchema, Kind, execute, getVariableValues, visit } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { CONDITIONS } from './document-check';
import { byteBoundedLru, compiledOperationBytes } from './document-cache';

/** `reason`: graphql-jit's first error, why the operation runs on graphql-js. */
export type JitFallback = { operationName: string | null; reason: string };

/** Apollo's plugins (Armor's suggestion blocker rewrites `message`) need graphql-js's writable fields; jit's are not. */
function asGraphqlJsError(error: GraphQLError): GraphQLError {
  const rebuilt = new GraphQLError(error.message, { path: error.path, originalError: error.originalError ?? undefined, extensions: error.extensions });
  if (error.locations) Object.defineProperty(rebuilt, 'locations', { value: error.locations, enumerable: true, writable: true });
  return rebuilt;
}

/** The variables of a document's `@skip`/`@include` conditions: one left null or missing makes graphql-js refuse it (GraphQL spec, CoerceArgumentValues). */
function conditionVariablesOf(document: DocumentNode): string[] {
  const names: string[] = [];
  visit(document, {
    Directive(node) {
      if (!CONDITIONS.has(node.name.value)) return;
      const condition = node.arguments?.find((argument) => argument.name.value === 'if')?.value;
      if (condition?.kind === Kind.VARIABLE) names.push(condition.name.value);
    },
  });
  return names;
}

/** Codes an error graphql-js raised itself (a GraphQLError with no code) as the client's input. */
function asBadUserInput(error: GraphQLError): GraphQLError {
  const raised = error.originalError ?? error;
  if (!(raised instanceof GraphQLError) || raised.extensions.code !== undefined) return error;
  return new GraphQLError(error.message, { nodes: error.nodes, path: error.path, extensions: { code: 'BAD_USER_INPUT' } });
}

/**
 * For ApolloServer's `gateway` option (no `schema` beside it): only execution changes, to
 * graphql-jit, compiled once per (document, operation name) in an LRU of `maxBytes` (bench/README.md
 * "What makes it fast"). graphql-js still coerces the variables, so errors read the same; what
 * jit cannot compile runs on graphql-js, and `onFallback` is told once. With `traced` (tracing on), each operation within a
 * traced request gets a span of its own.
 */
export function jitExecutorGateway(
  schema: GraphQLSchema,
  options: { maxBytes: number; onFallback: (fallback: JitFallback) => void; traced: boolean },
): GatewayInterface {
  // `query` undefined: jit could not compile it, and it runs on graphql-js. `bytes`: what the entry keeps alive.
  const compiled = byteBoundedLru<{ query: CompiledQuery | undefined; conditionVariables: string[]; bytes: number }>(options.maxBytes, ({ bytes }) => bytes);

  const executor: GatewayExecutor = async ({ document, operation, operationName, queryHash, request, context }) => {
    // No operation by that name: graphql-js reports it. `operationName` is the resolved one (null
    // here), so the client's is passed.
    if (!operation) return execute({ schema, document, operationName: request.operationName, contextValue: context, variableValues: request.variables });
    const key = `${queryHash}\u0000${operationName ?? ''}`;
    let entry = compiled.get(key);
    if (entry === undefined) {
      const result = compileQuery(schema, document, operationName ?? undefined);
      if (isCompiledQuery(result))
        entry = { query: result, conditionVariables: conditionVariablesOf(document), bytes: compiledOperationBytes(document, operation) };
      else {
        entry = { query: undefined, conditionVariables: [], bytes: 0 };
        options.onFallback({ operationName, reason: result.errors?.[0]?.message ?? 'unknown' });
      }
      compiled.set(key, entry);
    }
    const { query, conditionVariables } = entry;
    if (query === undefined) {
      return execute({ schema, document, operationName, contextValue: context, variableValues: request.variables });
    }
    const variables = getVariableValues(schema, operation.variableDefinitions ?? [], request.variables ?? {});
    if (variables.errors) return { errors: variables.errors };
    if (conditionVariables.some((name) => variables.coerced[name] == null)) {
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
    load: async () => ({ executor: options.traced ? tracedExecutor(executor) : executor }),
    stop: async () => undefined,
  };
}

/**
 * `executor` in a span per operation within a traced request (OpenTelemetry semantic conventions for GraphQL server spans:
 * named `query PetsPage`, or `query` when the operation has no name, with `graphql.operation.type` and
 * `graphql.operation.name`), so the statements its resolvers run are its children. graphql-jit runs outside the graphql
 * instrumentation's patches, so this span is made here. Outside a trace (tracing off) the executor runs as it is.
 */
function tracedExecutor(executor: GatewayExecutor): GatewayExecutor {
  const tracer = trace.getTracer('pet-store-gateway');
  return (requestContext) => {
    const { operation, operationName } = requestContext;
    if (!operation || trace.getActiveSpan() === undefined) return executor(requestContext);
    const type = operation.operation;
    const attributes = { 'graphql.operation.type': type, ...(operationName && { 'graphql.operation.name': operationName }) };
    return tracer.startActiveSpan(operationName ? `${type} ${operationName}` : type, { attributes }, async (span) => {
      try {
        return await executor(requestContext);
      } catch (error) {
        span.recordException(error as Error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    });
  };
}
