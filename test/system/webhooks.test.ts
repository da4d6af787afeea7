import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Webhook } from 'standardwebhooks';
import { apiKeyFor, built, freePort, runNode, startNode, waitForHttp, waitForOutput } from '../helpers/processes';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import type { DatabaseConfig } from '../../src/database/database-config';
import { openDatabase } from '../../src/database/open-database';
import { AuditTrail, CLI_ACTOR } from '../../src/audit/audit-trail';
import { WEBHOOK_LIMITS } from '../../src/limits';
import { WebhookEndpointService } from '../../src/webhooks/webhook-endpoint.service';
import { WebhookDispatcher } from '../../src/webhooks/webhook.dispatcher';
import { startTcpProxy } from '../helpers/tcp-proxy';
import { createPet, startTestApp } from '../helpers/test-app';
import { type Instance, startInstance, waitReady } from '../helpers/instances';
import { createProcessDatabase, createTestDatabase, describeOnMysql } from '../helpers/test-database';
import { startReceiver } from '../helpers/webhook-receiver';
import { compileProject } from '../helpers/typescript';

/*
 * Webhooks end to end (docs/webhooks.md): the built `webhook` CLI and the built server, delivering to real receivers on
 * 127.0.0.1 (so http and private targets are allowed here), among them the receiver example of examples/webhook-receiver.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const OPEN = { WEBHOOK_ALLOW_HTTP: '1', WEBHOOK_ALLOW_PRIVATE_TARGETS: '1' };

/** Resolves once `check` holds, polling every 50 ms; rejects after `ms`. */
async function until(check: () => boolean, ms: number): Promise<void> {
  const giveUpAt = Date.now() + ms;
  while (!check()) {
    if (Date.now() > giveUpAt) throw new Error('timed out');
    await sleep(50);
  }
}

describe('webhook CLI (`npm run webhook -- …`)', () => {
  let cwd: string;
  let env: Record<string, string>;
  let database: DatabaseConfig;
  let drop: () => Promise<void> = async () => undefined;
  const cli = (args: string[], extra: Record<string, string> = {}) => runNode(built('src/cli/webhook.cli.js'), args, { cwd, env: { ...env, ...extra } });
  const listed = async () => JSON.parse((await cli(['list', '--json'])).stdout) as Array<Record<string, unknown>>;

  beforeAll(async () => {
    ({ cwd, env, database, drop } = await createProcessDatabase('webhook-cli-'));
  });
  afterAll(() => drop());

  test('when an endpoint is added, listed, rotated, updated, disabled, enabled and removed, then each step says so, the secret is shown only by add and rotate, and each change is in the audit trail with channel cli', async () => {
    const added = await cli(['add', 'http://127.0.0.1:9/hook', '--status', 'sold', '--description', 'inventory'], OPEN);
    expect(added).toMatchObject({ code: 0, stderr: expect.stringMatching(/^endpoint \d+ receives the events created from now on\n$/) });
    expect(added.stdout).toMatch(/^whsec_[A-Za-z0-9+/]{43}=\n$/);
    const secret = added.stdout.trim();
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

    const [endpoint] = await listed();
    const id = String(endpoint.id);
    expect(endpoint).toEqual({
      id: expect.any(Number),
      url: 'http://127.0.0.1:9/hook',
      status: 'sold',
      description: 'inventory',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      enabled: true,
      state: 'enabled',
      disabledReason: null,
      cursor: 0,
      lag: 0,
      lastSuccessAt: null,
      lastFailureAt: null,
      consecutiveFailures: 0,
      failuresInRow: 0,
      nextAttemptAt: null,
    });
    const table = await cli(['list']);
    expect(table.stdout).toContain(`${id}\thttp://127.0.0.1:9/hook\tsold\tenabled\t0\tnever\tnever\t0\n`);
    expect(table.stdout).not.toContain(secret);

    const rotated = await cli(['rotate-secret', id, '--overlap', '2h']);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(/^whsec_/);
    expect(rotated.stdout.trim()).not.toBe(secret);
    expect(rotated.stderr).toMatch(new RegExp(`^the previous secret of endpoint ${id} signs too until \\d{4}-`));

    expect(await cli(['update', id, '--no-status', '--description', 'renamed'])).toMatchObject({ code: 0, stderr: `updated endpoint ${id}\n` });
    expect(await listed()).toEqual([expect.objectContaining({ url: 'http://127.0.0.1:9/hook', status: null, description: 'renamed' })]);
    expect(await cli(['update', id, '--url', 'https://127.0.0.1/hook'])).toMatchObject({
      code: 2,
      stderr: 'webhook: 127.0.0.1, a loopback address: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS=1 allows it, for development)\n',
    });
    expect(await listed()).toEqual([expect.objectContaining({ url: 'http://127.0.0.1:9/hook', status: null, description: 'renamed' })]);
    expect(await cli(['disable', id])).toMatchObject({ code: 0, stderr: `disabled endpoint ${id}\n` });
    expect(await listed()).toEqual([expect.objectContaining({ enabled: false, state: 'disabled', disabledReason: 'disabled by an operator' })]);
    expect(await cli(['enable', id])).toMatchObject({ code: 0, stderr: `enabled endpoint ${id}\n` });
    expect(await listed()).toEqual([expect.objectContaining({ enabled: true, state: 'enabled', disabledReason: null })]);
    expect(await cli(['remove', id])).toMatchObject({ code: 0, stderr: `removed endpoint ${id}\n` });
    expect(await listed()).toEqual([]);
    expect(await cli(['remove', id])).toMatchObject({ code: 1, stderr: `webhook: No webhook endpoint has id ${id}.\n` });

    // Each change, and the refused remove, is in the audit trail as the CLI's; no secret is.
    const opened = await openDatabase(database);
    try {
      const events: AuditEvent[] = await opened.writer.getRepository(AuditEvent).find({ where: { targetId: id }, order: { id: 'ASC' } });
      expect(
        events.map(({ channel, actorKeyId, requestId, address, action, outcome }) => ({ channel, actorKeyId, requestId, address, action, outcome })),
      ).toEqual(
        [
          ['webhook_endpoint.create', 'success'],
          ['webhook_endpoint.rotate_secret', 'success'],
          ['webhook_endpoint.update', 'success'],
          ['webhook_endpoint.update', 'BAD_USER_INPUT'],
          ['webhook_endpoint.update', 'success'],
          ['webhook_endpoint.update', 'success'],
          ['webhook_endpoint.delete', 'success'],
          ['webhook_endpoint.delete', 'NOT_FOUND'],
        ].map(([action, outcome]) => ({ channel: 'cli', actorKeyId: null, requestId: null, address: null, action, outcome })),
      );
      const everything = JSON.stringify(await opened.writer.getRepository(AuditEvent).find());
      expect(everything).not.toContain(secret.slice('whsec_'.length));
      expect(everything).not.toContain(rotated.stdout.trim().slice('whsec_'.length));
    } finally {
      await opened.close();
    }
  });

  const refusals: [string, string[], Record<string, string>, string | RegExp][] = [
    [
      'an http URL without WEBHOOK_ALLOW_HTTP',
      ['add', 'http://127.0.0.1:9/hook'],
      {},
      'webhook: http: URLs are refused: use https (http only with WEBHOOK_ALLOW_HTTP=1)\n',
    ],
    [
      'a loopback address',
      ['add', 'https://127.0.0.1/hook'],
      {},
      'webhook: 127.0.0.1, a loopback address: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS=1 allows it, for development)\n',
    ],
    [
      'the metadata address',
      ['add', 'https://169.254.169.254/latest'],
      {},
      'webhook: 169.254.169.254, a linkLocal address: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS=1 allows it, for development)\n',
    ],
    [
      'a name resolving to loopback',
      ['add', 'https://localhost/hook'],
      { WEBHOOK_ALLOW_HTTP: '1' },
      /^webhook: localhost resolves to .*, a loopback address: refused/,
    ],
    [
      'an IPv4-mapped private address',
      ['add', 'https://[::ffff:10.0.0.1]/hook'],
      {},
      'webhook: ::ffff:a00:1, a private address: refused (WEBHOOK_ALLOW_PRIVATE_TARGETS=1 allows it, for development)\n',
    ],
    ['not a URL', ['add', 'not a url'], {}, 'webhook: "not a url" is not an absolute URL such as https://example.com/webhooks\n'],
    [
      'an unknown status',
      ['add', 'https://hooks.example/x', '--status', 'lost'],
      OPEN,
      'webhook: Invalid input: status must be one of: available, pending, sold.\n',
    ],
    [
      'a description too long',
      ['add', 'http://127.0.0.1/x', '--description', 'x'.repeat(201)],
      OPEN,
      'webhook: Invalid input: description must be at most 200 characters (Unicode code points).\n',
    ],
  ];

  test.each(refusals)('when add gets %s, then it exits 2 with one line, nothing is stored, and the refusal is audited', async (_case, args, extra, message) => {
    const result = await cli(args, extra);
    expect(result).toMatchObject({ code: 2, stdout: '' });
    if (typeof message === 'string') expect(result.stderr).toBe(message);
    else expect(result.stderr).toMatch(message);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(await listed()).toEqual([]);
    const opened = await openDatabase(database);
    try {
      const [last] = await opened.writer.getRepository(AuditEvent).find({ order: { id: 'DESC' }, take: 1 });
      expect(last).toMatchObject({ channel: 'cli', action: 'webhook_endpoint.create', targetId: null, outcome: 'BAD_USER_INPUT' });
    } finally {
      await opened.close();
    }
  });

  test('when a command gets a bad id or duration, then it exits 2 with the usage', async () => {
    expect((await cli(['remove', 'abc'])).code).toBe(2);
    const result = await cli(['rotate-secret', '1', '--overlap', '5x']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('"5x" is not a duration');
  });
});

describe('the webhook receiver example (examples/webhook-receiver) against the built server', () => {
  test('when pets are created, then the example verifies each delivery and prints each pet once; a forged one is refused with 400', async () => {
    expect(compileProject(path.join(ROOT, 'examples', 'tsconfig.json'))).toEqual([]);
    const setup = await createProcessDatabase('webhook-example-');
    const port = await freePort();
    // Before the server starts: on the embedded database the server holds the file.
    const added = await runNode(built('src/cli/webhook.cli.js'), ['add', `http://127.0.0.1:${port}/`], { cwd: setup.cwd, env: { ...setup.env, ...OPEN } });
    expect(added.code).toBe(0);
    const ops = await runNode(built('src/cli/apikey.cli.js'), ['create', 'ops', '--scope', 'webhooks:admin'], { cwd: setup.cwd, env: setup.env });
    expect(ops.code).toBe(0);
    const example = startNode(path.join(ROOT, 'dist', 'examples', 'webhook-receiver', 'main.js'), {
      cwd: ROOT,
      env: { WEBHOOK_SECRET: added.stdout.trim(), PORT: String(port) },
    });
    const apiPort = await freePort();
    const server = startNode(built('src/main.js'), {
      cwd: setup.cwd,
      env: { ...setup.env, ...OPEN, PORT: String(apiPort), METRICS_PORT: String(await freePort()) },
    });
    try {
      await waitForOutput(example, 'listening on');
      await waitForHttp(`http://127.0.0.1:${apiPort}/healthz`);
      const apiKey = await apiKeyFor(server, setup, 'webhook-example');
      for (const name of ['Rex', 'Tom']) {
        const response = await fetch(`http://127.0.0.1:${apiPort}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name, categoryId: 1 }),
        });
        expect(response.status).toBe(201);
      }
      await waitForOutput(example, 'Tom');
      expect(example.output.stdout).toMatch(/pet\.created \d+ Rex \(available\)\npet\.created \d+ Tom \(available\)\n/);

      const forged = new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`);
      const body = JSON.stringify({ id: 'x', type: 'pet.created', pet: { id: 1, name: 'Forged', categoryId: 1, status: 'sold' } });
      const at = new Date();
      const response = await fetch(`http://127.0.0.1:${port}/`, {
        method: 'POST',
        headers: { 'webhook-id': 'x', 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': forged.sign('x', at, body) },
        body,
      });
      expect(response.status).toBe(400);
      await waitForOutput(example, 'refused: No matching signature found');
      expect(example.output.stdout).not.toContain('Forged');

      // examples/webhook-receiver/deliveries.ts: the attempts, then Rex's event again; the receiver drops the repeat.
      const events = (await (await fetch(`http://127.0.0.1:${apiPort}/v1/events`, { headers: { authorization: `Bearer ${apiKey}` } })).json()) as {
        id: string;
      }[];
      const deliveries = await runNode(path.join(ROOT, 'dist', 'examples', 'webhook-receiver', 'deliveries.js'), [], {
        cwd: ROOT,
        env: { API_URL: `http://127.0.0.1:${apiPort}`, API_KEY: ops.stdout.trim(), ENDPOINT_ID: '1', EVENT_ID: events[0].id },
      });
      expect(deliveries.stderr).toBe('');
      expect(deliveries.code).toBe(0);
      expect(deliveries.stdout).toContain(`delivery #1 of ${events[1].id}: HTTP 204`);
      expect(deliveries.stdout).toMatch(new RegExp(`redelivered: \\S+ redelivery #1 of ${events[0].id}: HTTP 204`));
      expect(example.output.stdout.match(/ Rex /g)).toHaveLength(1);
    } finally {
      server.child.kill('SIGTERM');
      example.child.kill();
      await Promise.all([server.exited, example.exited]);
      await setup.drop();
    }
  }, 90_000);
});

describe('webhooks at shutdown (the built server)', () => {
  test('when SIGTERM starts the drain, then the instance delivers nothing more while it still serves requests', async () => {
    const setup = await createProcessDatabase('webhook-shutdown-');
    const hook = await startReceiver();
    const added = await runNode(built('src/cli/webhook.cli.js'), ['add', hook.url], { cwd: setup.cwd, env: { ...setup.env, ...OPEN } });
    expect(added.code).toBe(0);
    const apiPort = await freePort();
    const server = startNode(built('src/main.js'), {
      cwd: setup.cwd,
      env: { ...setup.env, ...OPEN, PORT: String(apiPort), METRICS_PORT: String(await freePort()), SHUTDOWN_DRAIN_SECONDS: '3' },
    });
    try {
      await waitForHttp(`http://127.0.0.1:${apiPort}/healthz`);
      const apiKey = await apiKeyFor(server, setup, 'webhook-shutdown');
      const create = (name: string) =>
        fetch(`http://127.0.0.1:${apiPort}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name, categoryId: 1 }),
        });
      expect((await create('Before')).status).toBe(201);
      await until(() => hook.received.length === 1, 10_000);
      server.child.kill('SIGTERM');
      // Draining: /readyz fails while requests are still served.
      for (let ready = 200; ready !== 503; await sleep(50)) ready = (await fetch(`http://127.0.0.1:${apiPort}/readyz`)).status;
      // Served during the drain; a dispatcher still claiming would deliver it within its claim interval (0.5 s).
      expect((await create('During the drain')).status).toBe(201);
      await sleep(2_000);
      expect(hook.received.map((delivery) => JSON.parse(delivery.body).pet.name)).toEqual(['Before']);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
      await hook.close();
      await setup.drop();
    }
  }, 60_000);
});

describeOnMysql('webhooks across instances (built servers on one MariaDB)', () => {
  test('when the instance delivering to an endpoint is killed with kill -9, then the other resumes from its cursor: every pet in order, the repeat with the same webhook-id', async () => {
    const { database, drop } = await createTestDatabase();
    const url = (database as { url: string }).url;
    const cwd = await mkdtemp(path.join(tmpdir(), 'webhook-kill-'));
    let hanging = true;
    const hook = await startReceiver((_n, delivery) => (hanging && JSON.parse(delivery.body).pet.name === 'Pet 3' ? 'hang' : { status: 200 }));
    const instances: Instance[] = [];
    try {
      const added = await runNode(built('src/cli/webhook.cli.js'), ['add', hook.url], { cwd, env: { DATABASE_URL: url, ...OPEN } });
      expect(added.code).toBe(0);
      const secret = added.stdout.trim();
      const env = { DATABASE_URL: url, ...OPEN, NODE_ENV: 'test', LOG_LEVEL: 'info' };
      instances.push(await startInstance('a', cwd, env), await startInstance('b', cwd, env));
      await Promise.all(instances.map((instance) => waitReady(instance)));
      const apiKey = await apiKeyFor(instances[0].server, { cwd, database }, 'webhook-kill');
      const create = async (target: Instance, name: string) => {
        const response = await fetch(`${target.base}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name, categoryId: 1 }),
        });
        expect(response.status).toBe(201);
      };
      for (let i = 0; i < 6; i++) await create(instances[i % 2], `Pet ${i}`);
      await until(() => hook.received.some((delivery) => JSON.parse(delivery.body).pet.name === 'Pet 3'), 20_000);

      // The instance holding the endpoint's lease is the one waiting for Pet 3's answer.
      const opened = await openDatabase(database);
      const [{ lease_holder: holder }] = await opened.writer.query('SELECT lease_holder FROM webhook_endpoint');
      await opened.close();
      const delivering = instances.find((instance) => instance.server.output.stdout.includes(holder))!;
      const survivor = instances.find((instance) => instance !== delivering)!;
      expect(delivering).toBeDefined();
      await delivering.kill();
      const killedAt = Date.now();
      hanging = false;
      await create(survivor, 'Pet 6');

      await until(() => new Set(hook.received.map((delivery) => delivery.headers['webhook-id'])).size === 7, 30_000);
      const names = hook.received.map(
        (delivery) => (new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>) as { pet: { name: string } }).pet.name,
      );
      expect(names).toEqual(['Pet 0', 'Pet 1', 'Pet 2', 'Pet 3', 'Pet 3', 'Pet 4', 'Pet 5', 'Pet 6']);
      const repeats = hook.received.filter((delivery) => JSON.parse(delivery.body).pet.name === 'Pet 3');
      expect(repeats[1].headers['webhook-id']).toBe(repeats[0].headers['webhook-id']);
      console.info(`webhook delivery resumed ${repeats[1].at - killedAt} ms after kill -9 of the delivering instance`);
    } finally {
      await Promise.all(instances.map((instance) => instance.stop()));
      await hook.close();
      await drop();
    }
  }, 120_000);
});

describeOnMysql('webhooks through a database stall (a TCP proxy between the dispatcher and MariaDB)', () => {
  test('when the cursor update of a delivered event never gets its answer, then delivery resumes after the stall from the stored cursor: the event again with its webhook-id, then the rest, in order', async () => {
    const { database, drop } = await createTestDatabase();
    const url = new URL((database as { url: string }).url);
    const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 3306) });
    url.host = `127.0.0.1:${proxy.port}`;
    const t = await startTestApp({ database });
    const proxied = await openDatabase({ type: 'mysql', url: url.toString() });
    const hook = await startReceiver();
    const warnings: string[] = [];
    const dispatcher = new WebhookDispatcher({
      database: proxied,
      rules: { allowHttp: true, allowPrivateTargets: true },
      retrySchedule: [0, 0.1],
      log: { warn: (_fields: object, message?: string) => void warnings.push(message ?? ''), info: () => undefined },
      limits: { ...WEBHOOK_LIMITS, claimEveryMs: 100, leaseSeconds: 3 },
    });
    try {
      await new WebhookEndpointService(t.database, { allowHttp: true, allowPrivateTargets: true }, new AuditTrail(t.database, t.app.log)).create(
        { url: hook.url },
        CLI_ACTOR,
      );
      dispatcher.start();
      const names = () => hook.received.map((delivery) => (JSON.parse(delivery.body) as { pet: { name: string } }).pet.name);
      for (const name of ['Pet 0', 'Pet 1']) await createPet(t, { name });
      await until(() => names().length === 2, 10_000);

      proxy.stallAt('UPDATE `webhook_endpoint` SET `cursor_seq`', { deliver: false });
      await createPet(t, { name: 'Pet 2' });
      await until(() => names().includes('Pet 2'), 10_000);
      await until(() => warnings.some((warning) => warning.startsWith('webhooks: delivery interrupted by the database')), 10_000);
      await createPet(t, { name: 'Pet 3' });
      proxy.restore();

      await until(() => names().includes('Pet 3'), 20_000);
      expect(names()).toEqual(['Pet 0', 'Pet 1', 'Pet 2', 'Pet 2', 'Pet 3']);
      const repeats = hook.received.filter((delivery) => delivery.body.includes('"Pet 2"'));
      expect(repeats[1].headers['webhook-id']).toBe(repeats[0].headers['webhook-id']);
    } finally {
      await dispatcher.close();
      await hook.close();
      await proxied.close();
      await t.app.close();
      await t.database.close();
      await proxy.close();
      await drop();
    }
  }, 60_000);
});
