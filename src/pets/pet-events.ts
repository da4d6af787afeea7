/**
 * The port through which PetService tells the change feed (docs/events.md) that a pet may have been committed, so the
 * sequencer stamps it now rather than at its next tick. The feed does not depend on it: every committed pet is stamped
 * whether or not this is called (a create answered 504 included), and a call for a pet never stored changes nothing.
 * Best effort: neither throws nor waits.
 */
export interface PetEvents {
  /** After a create's INSERT was sent, whatever its outcome. */
  stored(): void;
}
