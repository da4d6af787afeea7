import { createRequire } from 'node:module';
import path from 'node:path';
import { Readable } from 'node:stream';
import { type ApolloServer, type BaseContext, HeaderMap } from '@apollo/server';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CSRF_PREVENTION } from '../../src/graphql/csrf-prevention';
import { AB_MARK, announce, announcingFirstCall, replaceFunction } from './replace-export';

type ContextOf = (request: FastifyRequest, reply: FastifyReply) => Promise<BaseContext>;
type HandlerFactory = (
  apollo: ApolloServer<BaseContext>,
  options?: { context?: ContextOf },
) => (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The request headers Apollo Server and our plugins read: body and answer types, and the CSRF prevention's. */
const FORWARDED = ['content-type', 'accept', ...CSRF_PREVENTION.requestHeaders.map((name) => name.toLowerCase())];

/**
 * The route handler with no integration: Apollo's `executeHTTPGraphQLRequest` called directly with
 * a HeaderMap of {@link FORWARDED} only and the query string sliced from the URL, where
 * @as-integrations/fastify copies every header and parses the URL with `new URL` on each request.
 */
const directHandler: HandlerFactory = (apollo, options) => {
  const contextOf: ContextOf = options?.context ?? (() => Promise.resolve({}));
  return announcingFirstCall('Apollo called directly: first GraphQL request without @as-integrations/fastify', async (request, reply) => {
    const headers = new HeaderMap();
    for (const name of FORWARDED) {
      const value = request.headers[name];
      if (typeof value === 'string') headers.set(name, value);
    }
    const query = request.url.indexOf('?');
    const answer = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: request.method, headers, body: request.body, search: query === -1 ? '' : request.url.slice(query) },
      context: () => contextOf(request, reply),
    });
    for (const [name, value] of answer.headers) void reply.header(name, value);
    void reply.code(answer.status ?? 200);
    return answer.body.kind === 'complete' ? answer.body.string : reply.send(Readable.from(answer.body.asyncIterator));
  });
};

// The package's index re-exports through getters, which cannot be replaced: its handler module's
// export can, and the getter reads it at each access. The package's `exports` map hides that
// module, so it is loaded by its absolute path, the one the index itself resolves.
const load = createRequire(path.resolve(__dirname, '..', '..', 'src', 'graphql', 'graphql.plugin.js'));
const index = load.resolve('@as-integrations/fastify');
const handlerModule = load(path.join(path.dirname(index), 'handler.js')) as { fastifyApolloHandler: HandlerFactory };
replaceFunction(handlerModule, 'fastifyApolloHandler', '@as-integrations/fastify handler.js', () => directHandler);
if ((load(index) as { fastifyApolloHandler: unknown }).fastifyApolloHandler !== directHandler) {
  throw new Error(`${AB_MARK} @as-integrations/fastify does not re-export its handler module: the preload cannot replace fastifyApolloHandler.`);
}
announce('Apollo Fastify integration off: fastifyApolloHandler() returns a handler calling executeHTTPGraphQLRequest directly');
