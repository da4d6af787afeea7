import type { Client } from 'graphql-ws';
import { SUBSCRIPTION_CLOSE } from '../../src/graphql/subscription-close.codes';
import { type Closed, connectWithKey, subscribe } from '../helpers/subscription-client';
import { type TestApp, startTestApp } from '../helpers/test-app';

/**
 * Open WebSockets of a key that is revoked, rolled or expires here (docs/api-keys.md "Revocation", docs/subscriptions.md
 * "Close codes"): closed with 4403 at once, not at the next periodic re-check (API_KEY_CACHE_SECONDS is 60 here).
 * Across instances through Redis: test/system/key-revocation.test.ts.
 */

/** How late a close may come after the instant it is due: the close handshake on a loaded machine. */
const SLACK_MS = 1000;

describe('WebSockets of keys that change in this process', () => {
  let t: TestApp;
  const clients: Client[] = [];
  beforeAll(async () => {
    t = await startTestApp({ env: { API_KEY_CACHE_SECONDS: '60' } });
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.dispose();
  });
  afterAll(() => t.close());

  /** Connects with `key` and runs a subscription; resolves with the close and when it came (Date.now()). */
  async function openWith(key: string) {
    const { client, closed } = await connectWithKey(t, key);
    clients.push(client);
    subscribe(client, 'subscription { petCreated { id } }');
    return { closed: closed.then((result: Closed) => ({ result, at: Date.now() })) };
  }

  test('when its key is revoked, then the socket is closed with 4403 within a second', async () => {
    const { apiKey, key } = await t.apiKeys.create('revoked with a socket open');
    const { closed } = await openWith(key);
    const revokedAt = Date.now();
    await t.apiKeys.revoke(apiKey.id);
    const { result, at } = await closed;
    expect(result).toEqual(SUBSCRIPTION_CLOSE.revoked);
    expect(at - revokedAt).toBeLessThan(SLACK_MS);
  });

  test('when its key expires, then the socket is closed with 4403 within a second of the expiry, not before', async () => {
    const { apiKey, key } = await t.apiKeys.create({ name: 'short-lived', expiresInMs: 1500 });
    const { closed } = await openWith(key);
    const { result, at } = await closed;
    expect(result).toEqual(SUBSCRIPTION_CLOSE.revoked);
    const late = at - apiKey.expiresAt!.getTime();
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(SLACK_MS);
  });

  test("when its key is rolled, then the old key's socket is closed within a second of the overlap's end, and the new key's stays open", async () => {
    const old = await t.apiKeys.create('rolled');
    const { closed: closedOld } = await openWith(old.key);
    const rolled = (await t.apiKeys.roll(old.apiKey.id, 1500))!;
    const { closed: closedNew } = await openWith(rolled.key);
    let newClosed = false;
    void closedNew.then(() => (newClosed = true));
    const { result, at } = await closedOld;
    expect(result).toEqual(SUBSCRIPTION_CLOSE.revoked);
    const late = at - rolled.previous.expiresAt!.getTime();
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(SLACK_MS);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(newClosed).toBe(false);
  });
});
