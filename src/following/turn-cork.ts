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

  /** @param stream - the stream the transport writes to (an HTTP response, the net.Socket under a WebSocket). */
  constructor(private readonly stream: Pick<Writable, 'cork' | 'uncork'>) {}

  /** Whether writes are held now: they leave on the next turn. */
  get held(): boolean {
    return this.corked;
  }

  /** Holds this turn's writes from now, if not held yet; they leave together on the next turn. */
  hold(): void {
    if (this.corked) return;
    this.corked = true;
    this.stream.cork();
    setImmediate(this.release);
  }

  private readonly release = (): void => {
    this.corked = false;
    this.stream.uncork();
  };
}
