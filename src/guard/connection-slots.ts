import { SUBSCRIPTION_LIMITS } from '../limits';

/**
 * How many long-lived connections each API key holds on this instance, and the rule that caps them at
 * SUBSCRIPTION_LIMITS.maxConnectionsPerKey (docs/subscriptions.md "Limits"): one per kind of connection (WebSockets,
 * SSE streams), created by whoever serves that kind and dropped with it.
 */
export class ConnectionSlots {
  private readonly perKey = new Map<number, number>();

  constructor(private readonly maxPerKey: number = SUBSCRIPTION_LIMITS.maxConnectionsPerKey) {}

  /** Takes a slot for key `apiKeyId`; false (nothing taken) when it holds all it may. */
  take(apiKeyId: number): boolean {
    const open = this.perKey.get(apiKeyId) ?? 0;
    if (open >= this.maxPerKey) return false;
    this.perKey.set(apiKeyId, open + 1);
    return true;
  }

  /** Gives back one slot of `apiKeyId`, taken by {@link take}. */
  give(apiKeyId: number): void {
    const left = (this.perKey.get(apiKeyId) ?? 1) - 1;
    if (left > 0) this.perKey.set(apiKeyId, left);
    else this.perKey.delete(apiKeyId);
  }

  /** The most one key may hold. */
  get limit(): number {
    return this.maxPerKey;
  }
}
