/**
 * What the shutdown sequence tells the rest of the app (docs/operations.md "Signals"): whether it is draining (`/readyz`
 * then answers 503), and what must be closed once the listener stops accepting (WebSockets, event streams, webhook
 * deliveries), which would otherwise keep the server open. One per app, made by its owner (startService, or a test).
 */
export class ServiceState {
  draining = false;
  private readonly drainHooks: Array<() => Promise<void>> = [];
  private readonly stopHooks: Array<() => Promise<void>> = [];
  private stopping: Promise<void> | undefined;
  private drainingDone: Promise<void> | undefined;

  /** Registers `stop`, run once as the drain starts: for work an instance must not start while leaving (webhook deliveries). */
  onDrain(stop: () => Promise<void>): void {
    this.drainHooks.push(stop);
  }

  /** Marks the service draining (`/readyz` 503) and runs every drain hook, together; resolves once they are done. Once. */
  startDraining(): Promise<void> {
    this.draining = true;
    return (this.drainingDone ??= Promise.all(this.drainHooks.map((stop) => stop())).then(() => undefined));
  }

  /** Registers `close`, run once by {@link stopAccepting}. */
  onStopAccepting(close: () => Promise<void>): void {
    this.stopHooks.push(close);
  }

  /** Runs every registered close, together; once: a second call (the app's own close after a drain) waits for the first. */
  stopAccepting(): Promise<void> {
    return (this.stopping ??= Promise.all(this.stopHooks.map((close) => close())).then(() => undefined));
  }
}
