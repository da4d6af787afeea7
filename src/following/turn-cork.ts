import type { Writable } from 'node:stream';

/**
 * Batches the writes of one turn of the event loop to one stream into one write: a feed advance hands its events to
 * every follower in one turn (docs/architecture.md "Following"), and each event is a write of its own (an SSE frame, a
 * graphql-ws `next` message through ws), so without it each event to each follower is a syscall of its own. Before each
 * write the transport calls {@link hold}: the first of a turn corks the stream, and the stream is uncorked on the next
 * turn (`setImmediate`), when what was queued leaves in one `writev`. Corked bytes stay in the stream's `writableLength`
 * (what ReaderPace reads), so pacing is unchanged; the order of writes is kept.
 */
export class TurnCork {
  private corked = false;
  /** What waits for the held writes to leave: {@link afterRelease}. */
  private readonly waiting: (() => void)[] = [];

  /** @param stream - the stream the transport writes to (an HTTP response, the net.Socket under a WebSocket). */
  constructor(private readonly stream: Pick<Writable, 'cork' | 'uncork'>) {}

  /** Holds this turn's writes from now, if not held yet; they leave together on the next turn. */
  hold(): void {
    if (this.corked) return;
    this.corked = true;
    this.stream.cork();
    setImmediate(this.release);
  }

  /**
   * Runs `action` once what this turn holds has left: at once when nothing is held, else right after the release. For
   * ending the stream: ended while corked, Node 24 writes a chunked HTTP answer's last chunk ahead of the held writes.
   */
  afterRelease(action: () => void): void {
    if (this.corked) this.waiting.push(action);
    else action();
  }

  private readonly release = (): void => {
    this.corked = false;
    this.stream.uncork();
    for (const action of this.waiting.splice(0)) action();
  };
}
