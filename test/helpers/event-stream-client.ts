import { type IncomingMessage, request as httpRequest } from 'node:http';

/** A client of the REST change feed, `GET /v1/events` (docs/events.md): its JSON pages, and its server-sent event stream (`Accept: text/event-stream`). */

/** One parsed SSE block: its fields (`data` lines joined), or `comment` for a comment-only block. */
export type Frame = Record<string, string>;

/** Parses one SSE block (the text between two blank lines). */
export function parseFrame(block: string): Frame {
  const frame: Frame = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) frame.comment = line.slice(1);
    else {
      const [, field, value] = /^([^:]+): ?(.*)$/.exec(line) ?? [];
      if (field) frame[field] = field === 'data' && frame.data !== undefined ? `${frame.data}\n${value}` : value;
    }
  }
  return frame;
}

/** An open stream: the frames so far (the array grows), and when each arrived. */
export interface EventStream {
  response: IncomingMessage;
  frames: Frame[];
  /** `performance.now()` when each frame arrived, index for index. */
  receivedAt: number[];
  /** The events received (`data` parsed). */
  events: () => any[];
  /** The `id` of the last event received: the cursor to resume after; undefined before the first. */
  lastEventId: () => string | undefined;
  /** Resolves when the server ends the stream or the connection breaks. */
  ended: Promise<void>;
  close: () => void;
}

/**
 * Opens the stream on `target` with its key, on node:http; resolves once the response's head has arrived.
 * @param query - e.g. `?after=<cursor>&status=sold`; `headers` e.g. `last-event-id`.
 */
export function openEventStream(target: { url: string; apiKey: string }, query = '', headers: Record<string, string> = {}): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${target.url}/v1/events${query}`, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${target.apiKey}`, ...headers },
    });
    req.on('error', reject);
    req.on('response', (response) => {
      const frames: Frame[] = [];
      const receivedAt: number[] = [];
      let buffer = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffer += chunk;
        const blocks = buffer.split('\n\n');
        buffer = blocks.pop()!;
        for (const block of blocks) {
          frames.push(parseFrame(block));
          receivedAt.push(performance.now());
        }
      });
      response.on('error', () => undefined);
      const ended = new Promise<void>((done) => {
        response.on('close', () => done());
        response.on('end', () => done());
      });
      resolve({
        response,
        frames,
        receivedAt,
        events: () => frames.filter((frame) => frame.event !== undefined).map((frame) => JSON.parse(frame.data)),
        lastEventId: () => [...frames].reverse().find((frame) => frame.event !== undefined)?.id,
        ended,
        close: () => req.destroy(),
      });
    });
    req.end();
  });
}

/**
 * Walks the JSON pages of `target` from `after` (from the beginning without it), 100 events a page, following
 * `Link` rel="next" until an empty page.
 * @returns the pets' ids in feed order, and how many pages were read.
 * @throws Error when a page is not 200.
 */
export async function walkEvents(target: { url: string; apiKey: string }, after?: string): Promise<{ ids: number[]; count: number }> {
  const ids: number[] = [];
  let path = `/v1/events?limit=100${after === undefined ? '' : `&after=${encodeURIComponent(after)}`}`;
  for (let count = 1; ; count++) {
    const response = await fetch(`${target.url}${path}`, { headers: { authorization: `Bearer ${target.apiKey}` } });
    const page = (await response.json()) as { pet: { id: number } }[];
    if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${JSON.stringify(page)}`);
    if (page.length === 0) return { ids, count };
    ids.push(...page.map((event) => Number(event.pet.id)));
    path = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')![1];
  }
}
