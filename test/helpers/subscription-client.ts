import { type Client, type FormattedExecutionResult, type SubscribePayload, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import type { Metrics } from '../../src/observability/metrics.registry';

/** A graphql-ws client (with `ws` as its WebSocket) for the subscription suites, and what they wait for. */

/** The WebSocket URL of an app's `/graphql`. */
export const wsUrl = (t: { url: string }) => `${t.url.replace(/^http/, 'ws')}/graphql`;

/** How a socket ended, as the client saw it. */
export interface Closed {
  code: number;
  reason: string;
}

/** A graphql-ws client that never retries, connected at once, and how its socket closed. */
export function connect(t: { url: string }, connectionParams: Record<string, unknown> | undefined) {
  let onClosed: (closed: Closed) => void = () => undefined;
  let client!: Client;
  const closed = new Promise<Closed>((resolve) => (onClosed = resolve));
  const connected = new Promise<void>((resolve) => {
    client = createClient({
      url: wsUrl(t),
      webSocketImpl: WebSocket,
      connectionParams,
      lazy: false,
      retryAttempts: 0,
      // Errors reach the test through `closed`.
      onNonLazyError: () => undefined,
      on: {
        connected: () => resolve(),
        closed: (event) => onClosed({ code: (event as { code: number }).code, reason: String((event as { reason: unknown }).reason) }),
      },
    });
  });
  return { client, closed, connected };
}

/** A client authenticated with the app's key (or `key`), once acknowledged. */
export async function connectWithKey(t: { url: string; apiKey: string }, key = t.apiKey) {
  const connection = connect(t, { Authorization: `Bearer ${key}` });
  await Promise.race([connection.connected, connection.closed.then((closed) => Promise.reject(new Error(`closed ${closed.code} ${closed.reason}`)))]);
  return connection;
}

/**
 * Subscribes and collects what arrives: results, and the error or completion that ends it.
 * @param query - the document, or a whole `subscribe` payload (a trusted document's `documentId`, say).
 */
export function subscribe(client: Client, query: string | (SubscribePayload & { documentId?: string }), variables?: Record<string, unknown>) {
  const results: FormattedExecutionResult<Record<string, unknown>, unknown>[] = [];
  /** When each result arrived (`performance.now()`), for latencies. */
  const receivedAt: number[] = [];
  let waiters: Array<() => void> = [];
  const state: { error?: unknown; complete: boolean } = { complete: false };
  const wake = () => {
    const now = waiters;
    waiters = [];
    for (const waiter of now) waiter();
  };
  const unsubscribe = client.subscribe(typeof query === 'string' ? { query, variables } : query, {
    next: (result) => {
      results.push(result);
      receivedAt.push(performance.now());
      wake();
    },
    error: (error) => {
      state.error = error;
      wake();
    },
    complete: () => {
      state.complete = true;
      wake();
    },
  });
  const until = (done: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => (done() ? resolve() : waiters.push(check));
      check();
    });
  return {
    results,
    receivedAt,
    state,
    unsubscribe,
    /** Resolves with the first `n` events received: the root field's value (petCreated's pet, petEvents' event). */
    pets: async (n: number) => {
      await until(() => results.length >= n || state.error !== undefined);
      if (state.error !== undefined) throw new Error(`subscription failed: ${JSON.stringify(state.error)}`);
      return results.slice(0, n).map((result) => Object.values(result.data ?? {})[0]);
    },
    /** Resolves with the error that ended the subscription (the GraphQL errors of an `error` message). */
    error: async () => {
      await until(() => state.error !== undefined || state.complete);
      return state.error as Array<{ message: string; extensions?: { code?: string } }>;
    },
  };
}

/** Current value of a metric of `metrics` (summed over its label sets). */
export async function metricValue(metrics: Metrics, name: string): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  return (await metric.get()).values.reduce((sum, { value }) => sum + value, 0);
}

/**
 * Waits until the server runs `n` subscriptions: graphql-ws has no acknowledgement of a
 * subscribe, and an event published before it runs is (rightly) not delivered.
 */
export async function untilActive(metrics: Metrics, n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await metricValue(metrics, 'petstore_subscriptions_active')) < n) {
    if (Date.now() > deadline) throw new Error(`fewer than ${n} subscriptions became active`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The pet as the subscription sends it: `id` as a string (GraphQL ID). */
export const asEvent = (pet: { id: number; name: string; categoryId: number; status: string }) => ({ ...pet, id: String(pet.id) });
