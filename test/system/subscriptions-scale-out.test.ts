import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect as connectTcp } from 'node:net';
import type { Client } from 'graphql-ws';
import { Redis } from 'ioredis';
import { createMetrics } from '../../src/observability/metrics.registry';
import { apiKeyFor, built, freePort, startNode, waitForHttp } from '../helpers/processes';
import { asEvent, connectWithKey, subscribe, untilActive } from '../helpers/subscription-client';
import { createPet, startTestApp } from '../helpers/test-app';
import { createProcessDatabase, createTestDatabase, testOnMysql } from '../helpers/test-database';

/**
 * `Subscription.petCreated` across instances sharing a database and a Redis, and a built server's shutdown
 * with open WebSockets (docs/subscriptions.md); the in-process suite is test/integration/subscriptions.test.ts.
 */

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PET_FIELDS = 'id name categoryId status';

describe('petCreated across instances (the change feed, poked through Redis)', () => {
  // Events come from the shared database's feed (docs/events.md): two instances must share one, which the embedded database cannot.
  testOnMysql('when two instances share a database and a Redis, then a pet created on A reaches a subscriber on B, and one on A, once each', async () => {
    const namespace = `pet-store-test:${randomUUID()}:`;
    const channel = `${namespace}pet-feed`;
    const env = { REDIS_URL, REDIS_NAMESPACE: namespace };
    const metricsB = createMetrics();
    const metricsA = createMetrics();
    const { database, drop } = await createTestDatabase();
    const a = await startTestApp({ database, env, observe: { metrics: metricsA } });
    const b = await startTestApp({ database, env, observe: { metrics: metricsB } });
    const redis = new Redis(REDIS_URL);
    const clients: Client[] = [];
    try {
      // Both instances listen on the channel before anything is published.
      for (;;) {
        const [, listeners] = (await redis.pubsub('NUMSUB', channel)) as [string, number];
        if (Number(listeners) >= 2) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const onB = await connectWithKey(b);
      const onA = await connectWithKey(a);
      clients.push(onB.client, onA.client);
      const subB = subscribe(onB.client, `subscription { petCreated(status: sold) { ${PET_FIELDS} } }`);
      const subA = subscribe(onA.client, `subscription { petCreated { ${PET_FIELDS} } }`);
      await untilActive(metricsB, 1);
      await untilActive(metricsA, 1);
      const pet = await createPet(a, { name: 'Traveller', categoryId: 9007199254740991, status: 'sold' });
      expect(await subB.pets(1)).toEqual([asEvent(pet)]);
      expect(await subA.pets(1)).toEqual([asEvent(pet)]);
      const marker = await createPet(b, { name: 'Back', status: 'sold' });
      expect(await subB.pets(2)).toEqual([asEvent(pet), asEvent(marker)]);
      expect(await subA.pets(2)).toEqual([asEvent(pet), asEvent(marker)]);
    } finally {
      for (const client of clients) await client.dispose();
      redis.disconnect();
      await a.close();
      await b.close();
      await drop();
    }
  });
});

describe('shutdown', () => {
  test('when the server gets SIGTERM, then after the drain its WebSockets are closed with 1001 and it exits 0', async () => {
    const { cwd, database, env, drop } = await createProcessDatabase('subscriptions-');
    const port = await freePort();
    const server = startNode(built('src/main.js'), {
      cwd,
      env: {
        NODE_ENV: database.type === 'mysql' ? 'production' : 'development',
        PORT: String(port),
        METRICS_PORT: String(await freePort()),
        SHUTDOWN_DRAIN_SECONDS: '1',
        ...env,
      },
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(`${base}/healthz`);
      const apiKey = await apiKeyFor(server, { cwd, database }, 'subscriptions');
      const { client, closed } = await connectWithKey({ url: base, apiKey });
      const sub = subscribe(client, `subscription { petCreated { id } }`);
      // The subscription runs: a create reaches it.
      const created = await fetch(`${base}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json; charset=utf-8' },
        body: JSON.stringify({ name: 'Last', categoryId: 1 }),
      });
      expect(created.status).toBe(201);
      await sub.pets(1);
      // Upgraded sockets that are not WebSockets do not hold the shutdown either: a refused
      // upgrade whose peer keeps its half open, and a POST with `Upgrade: h2c` (answered 400).
      const halfOpen = connectTcp({ port, host: '127.0.0.1', allowHalfOpen: true });
      halfOpen.on('error', () => undefined);
      halfOpen.write(
        'GET /v1/pets HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      );
      await new Promise((resolve) => halfOpen.once('data', resolve)); // the 404
      const h2c = await new Promise<number>((resolve, reject) => {
        const outgoing = httpRequest(`${base}/v1/pets`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${apiKey}`,
            'content-type': 'application/json; charset=utf-8',
            connection: 'Upgrade, HTTP2-Settings',
            upgrade: 'h2c',
            'http2-settings': '',
          },
        });
        outgoing.on('response', (response) => {
          response.resume();
          response.on('end', () => resolve(response.statusCode ?? 0));
        });
        outgoing.on('error', reject);
        outgoing.end(JSON.stringify({ name: 'Up', categoryId: 1 }));
      });
      expect(h2c).toBe(400);
      const signalledAt = Date.now();
      server.child.kill('SIGTERM');
      const result = await closed;
      const closedAfterMs = Date.now() - signalledAt;
      expect(result).toEqual({ code: 1001, reason: 'Going away: the server is shutting down.' });
      // Not before the drain (1 s), during which the socket still serves.
      expect(closedAfterMs).toBeGreaterThanOrEqual(1000);
      expect(await server.exited).toBe(0);
      // Well within the grace period (10 s): nothing waited for it.
      expect(Date.now() - signalledAt).toBeLessThan(5000);
      halfOpen.destroy();
      await client.dispose();
    } finally {
      server.child.kill('SIGKILL');
      await drop();
    }
  }, 60_000);
});
