import { type IncomingMessage, request as httpRequest } from 'node:http';

/** A client of the REST change feed's server-sent event stream, `GET /v1/events` with `Accept: text/event-stream` (docs/events.md). */

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
