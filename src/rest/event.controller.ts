import type { FastifyPluginAsync, onRequestAsyncHookHandler } from 'fastify';
import Negotiator from 'negotiator';
import type { PetEventService } from '../events/pet-event.service';
import type { FeedFollowers } from '../following/feed-followers';
import { EventStreams } from '../following/sse.transport';
import { callerOf, guardStateOf } from '../guard/request.guard';
import { rejectOtherMethods } from '../http/method-not-allowed';
import {
  CONDITIONAL_REQUEST_HEADERS,
  HEADERS,
  LAST_EVENT_ID_HEADER,
  LIST_EVENTS_QUERY,
  errorResponses,
  eventsResponse,
  notModifiedResponse,
  operationSecurity,
} from './openapi.schemas';
import { queryInput } from './query-input';
import { FOLLOWER_LIMITS } from '../limits';
import { nextPageLink } from './next-page-link';

export interface EventControllerOptions {
  petEvents: PetEventService;
  /** The onRequest hook guarding every operation (guard/request.guard.ts): key, rate limit, caller. */
  guard: onRequestAsyncHookHandler;
  /** Every stream of the feed, SSE and WebSocket: admission, the key at every instant, pacing, metrics, shutdown. */
  followers: FeedFollowers;
}

/** The media types listEvents answers in, JSON first: what `*\/*` or no Accept gets. */
const MEDIA_TYPES = ['application/json', 'text/event-stream'];

/** The fields of a JSON page's 200 and of its 304. */
const EVENTS_PAGE_HEADERS = { ...HEADERS.FEED_NEXT_LINK, ...HEADERS.CONDITIONAL, ...HEADERS.RATE_LIMIT, ...HEADERS.API_KEY_EXPIRES };

/**
 * `GET /v1/events` (docs/events.md): the change feed a page at a time as JSON, or with `Accept: text/event-stream` as a
 * server-sent event stream that replays, then follows, under the rules of every follower (FeedFollowers: one budget per
 * key with the WebSockets, the key's validity at every instant, pacing, shutdown).
 */
export const eventController: FastifyPluginAsync<EventControllerOptions> = async (app, { petEvents, guard, followers }) => {
  const streams = new EventStreams(followers, app.log);
  await app.register(async (operations) => {
    operations.addHook('onRequest', guard);
    // Input is validated once, by PetEventService's rules; route schemas only document and serialise.
    operations.setValidatorCompiler(() => () => true);
    operations.get(
      '/events',
      {
        schema: {
          operationId: 'listEvents',
          security: operationSecurity('listEvents'),
          summary: 'The change feed: every pet created, in one order',
          description:
            'Every committed pet exactly once, in the feed order every instance agrees on (docs/events.md). JSON: a page at a time from the beginning ' +
            '(without `after`), so walking the `Link` rel="next" pages is the complete list; the link is always there, the way to poll. ' +
            'With `Accept: text/event-stream`: a server-sent event stream that replays after `Last-Event-ID` (it wins) or `after`, ' +
            'else starts from now, then goes live. A stream whose key is revoked or expires ends with an `error` event whose data is the Error ' +
            `shape (\`UNAUTHENTICATED\`, \`invalid_token\`): get another key. A key holds at most ${FOLLOWER_LIMITS.maxStreamsPerKey} streams per instance, SSE and WebSocket together. ` +
            'Unknown query parameters are refused.',
          tags: ['events'],
          querystring: LIST_EVENTS_QUERY,
          headers: { type: 'object', properties: { ...CONDITIONAL_REQUEST_HEADERS.properties, ...LAST_EVENT_ID_HEADER.properties } },
          response: {
            200: eventsResponse(EVENTS_PAGE_HEADERS),
            ...notModifiedResponse(EVENTS_PAGE_HEADERS),
            ...errorResponses(['BAD_USER_INPUT', 'UNAUTHENTICATED', 'FORBIDDEN', 'TOO_MANY_REQUESTS', 'INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE']),
          },
        },
        // JSON pages only: a stream's body is not bytes, so it gets no tag.
        config: { conditionalGet: true },
      },
      async (request, reply) => {
        const query = queryInput(request.query);
        const accept = request.headers.accept ?? '*/*';
        const wantsStream = request.method === 'GET' && new Negotiator({ headers: { accept } }).mediaType(MEDIA_TYPES) === 'text/event-stream';
        if (!wantsStream) {
          const page = await petEvents.listEvents(query, callerOf(request));
          reply.header('Link', nextPageLink(`${app.prefix}/events`, { limit: page.limit, status: page.status, after: page.nextCursor }));
          return page.events;
        }
        const lastEventId = request.headers['last-event-id'];
        const start = await petEvents.streamStart(query, Array.isArray(lastEventId) ? lastEventId.join(',') : lastEventId);
        return streams.serve(reply, guardStateOf(request), start);
      },
    );
  });
  rejectOtherMethods(app, '/events', ['GET', 'HEAD']);
};
