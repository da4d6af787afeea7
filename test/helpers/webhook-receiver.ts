import { type IncomingHttpHeaders, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { WEBHOOK_LIMITS, type WebhookLimits } from '../../src/limits';
import type { WebhookTargetRules } from '../../src/webhooks/webhook-target.policy';

/** A dispatcher's limits for tests: claims every 50 ms, 2 s leases, an attempt given up after 0.5 s. */
export const FAST_WEBHOOK_LIMITS: WebhookLimits = Object.freeze({ ...WEBHOOK_LIMITS, claimEveryMs: 50, leaseSeconds: 2, attemptTimeoutMs: 500 });

/** Target rules that let a test deliver to its own receiver on 127.0.0.1 over http. */
export const OPEN_TARGETS: WebhookTargetRules = Object.freeze({ allowHttp: true, allowPrivateTargets: true });

/** Retries 50 ms apart: five of them. */
export const FAST_RETRIES: readonly number[] = Object.freeze([0, 0.05, 0.05, 0.05, 0.05, 0.05]);

/** Resolves once `check` holds, polling every 20 ms; rejects after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const giveUpAt = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error('timed out');
    await sleep(20);
  }
}

/** One request a receiver got. */
export interface ReceivedDelivery {
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() when it arrived. */
  at: number;
}

/** What the receiver answers to its `n`th request (0-based): a status, headers and body (default `ok`), or `hang` (never answer). */
export type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/**
 * A webhook receiver on 127.0.0.1: a real HTTP server that records every request and answers as `answer` says (once its
 * promise settles, when it returns one).
 */
export async function startReceiver(answer: (n: number, delivery: ReceivedDelivery) => Answer | Promise<Answer> = () => ({ status: 204 })) {
  const received: ReceivedDelivery[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const server = createServer((request, response) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const delivery = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      const answered = answer(received.length, delivery);
      received.push(delivery);
      void Promise.resolve(answered).then((reply) => {
        if (reply === 'hang') return;
        response.writeHead(reply.status, reply.headers).end(reply.body ?? 'ok', () => inFlight--);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `http://127.0.0.1:${port}/hook`,
    received,
    /** The most requests it held at once. */
    maxInFlight: () => maxInFlight,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
