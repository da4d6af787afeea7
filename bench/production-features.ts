import { type ChildProcess, fork } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sha256Hex } from '../src/graphql/trusted-documents';
import { waitUntilDelivered } from './bench-database';
import { WEBHOOK_CLI, WEBHOOK_ENV, addWebhookEndpoint, webhookCli } from './feed';
import { GRAPHQL_DOCUMENTS } from './scenarios';
import type { WebhookReceiverReply, WebhookReceiverRequest } from './webhook-receiver.server';

/**
 * The features a production instance runs that the bench can switch off by configuration alone (bench/README.md
 * "Method" and "Features"): Redis, the trusted documents, the webhook dispatcher with its one endpoint; and what the
 * dispatcher's endpoint needs that production refuses (`test` mode), and the request log (at `info`).
 */
export interface FeatureSwitches {
  /** REDIS_URL with the run's own REDIS_NAMESPACE. */
  redis: boolean;
  /** TRUSTED_DOCUMENTS: a manifest of the scenarios' GraphQL documents. */
  trustedDocuments: boolean;
  /** WEBHOOK_DELIVERIES=true and one endpoint (every pet) at the bench's receiver; false: WEBHOOK_DELIVERIES=false, no endpoint. */
  webhooks: boolean;
  /**
   * NODE_ENV=test with WEBHOOK_ALLOW_HTTP and WEBHOOK_ALLOW_PRIVATE_TARGETS, which production refuses and a receiver on
   * 127.0.0.1 needs; false: NODE_ENV=production (then `webhooks` must be false).
   */
  testMode: boolean;
  /** LOG_LEVEL=info (a line per request, as `npm start` logs) instead of the bench's `warn`. */
  requestLog: boolean;
}

/** Every feature as the bench's rounds run them: all on, the request log off (`warn`), test mode for the webhook's sake. */
export const ALL_ON: Readonly<FeatureSwitches> = Object.freeze({ redis: true, trustedDocuments: true, webhooks: true, testMode: true, requestLog: false });

/** Which of the variables a build reads: an older commit (`--baseline`) is given only those it knows, or older names. */
interface BuildKnows {
  redisNamespace: boolean;
  oldRedisNames: boolean;
  trustedDocuments: boolean;
  webhooks: boolean;
}

/** What `directory`'s build reads, from its compiled configuration's text (dist/src/config.js) and its webhook CLI. */
function buildKnows(directory: string): BuildKnows {
  const configFile = path.join(directory, 'dist', 'src', 'config.js');
  const config = existsSync(configFile) ? readFileSync(configFile, 'utf8') : '';
  return {
    redisNamespace: config.includes('REDIS_NAMESPACE'),
    oldRedisNames: config.includes('RATE_LIMIT_NAMESPACE') && config.includes('PET_EVENTS_CHANNEL'),
    trustedDocuments: config.includes('TRUSTED_DOCUMENTS'),
    webhooks: existsSync(path.join(directory, WEBHOOK_CLI)),
  };
}

/**
 * Writes an Apollo persisted query manifest (docs/api-keys.md "Trusted documents") of every GraphQL document the
 * scenarios send, each under the SHA-256 hex digest of its exact text, to `file`.
 */
export function writeTrustedDocumentsManifest(file: string): void {
  const operations = GRAPHQL_DOCUMENTS.map(({ name, type, body }) => ({ id: sha256Hex(body), name, type, body }));
  writeFileSync(file, `${JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 1, operations }, null, 2)}\n`);
}

/** What {@link ProductionFeatures.start} needs. */
export interface ProductionFeaturesOptions {
  /** The bench's database, where the endpoint is registered. */
  databaseUrl: string;
  redisUrl: string;
  /** This checkout (its webhook CLI registers and removes the endpoint). */
  root: string;
  log: (message: string) => void;
}

/**
 * The service's production set-up for one bench run (bench/README.md "Method"): a Redis namespace of the run's own, a
 * trusted document manifest in a temporary file, and a webhook receiver in a child process with one endpoint at it in
 * the bench's database. {@link close} removes all three.
 */
export class ProductionFeatures {
  /** The endpoint registered now, if any. */
  private endpoint: number | undefined;

  private constructor(
    private readonly options: ProductionFeaturesOptions,
    private readonly receiver: ChildProcess,
    /** The receiver's URL, where the endpoint points. */
    readonly receiverUrl: string,
    /** The manifest file TRUSTED_DOCUMENTS names. */
    readonly manifest: string,
    /** REDIS_NAMESPACE: the run's own, so that runs and tests sharing a Redis share no counter or channel. */
    readonly namespace: string,
  ) {}

  /** Writes the manifest and starts the receiver; registers nothing yet ({@link freshEndpoint}). */
  static async start(options: ProductionFeaturesOptions): Promise<ProductionFeatures> {
    const tag = `petstore-bench-${process.pid}-${Date.now()}`;
    const manifest = path.join(os.tmpdir(), `${tag}-trusted-documents.json`);
    writeTrustedDocumentsManifest(manifest);
    const receiver = fork(path.join(__dirname, 'webhook-receiver.server.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] });
    const url = await new Promise<string>((resolve, reject) => {
      receiver.once('message', (reply: WebhookReceiverReply) => (reply.type === 'listening' ? resolve(reply.url) : reject(new Error('unexpected reply'))));
      receiver.once('exit', (code) => reject(new Error(`the webhook receiver exited (${code}) before listening`)));
    });
    options.log(`Production set-up: REDIS_NAMESPACE ${tag}:, TRUSTED_DOCUMENTS ${manifest} (${GRAPHQL_DOCUMENTS.length} documents), webhook receiver ${url}`);
    return new ProductionFeatures(options, receiver, url, manifest, `${tag}:`);
  }

  /**
   * The environment of `directory`'s build with `switches`: each variable only if the build reads it (a baseline that
   * predates REDIS_NAMESPACE gets the older RATE_LIMIT_NAMESPACE and PET_EVENTS_CHANNEL instead; one without webhooks
   * runs in production).
   * @returns the variables to add to the service's own (NODE_ENV and LOG_LEVEL always).
   */
  envOf(directory: string, switches: FeatureSwitches): Record<string, string> {
    const knows = buildKnows(directory);
    const testMode = switches.testMode && knows.webhooks;
    return {
      NODE_ENV: testMode ? WEBHOOK_ENV.NODE_ENV : 'production',
      LOG_LEVEL: switches.requestLog ? 'info' : 'warn',
      ...(switches.redis && { REDIS_URL: this.options.redisUrl }),
      ...(switches.redis && knows.redisNamespace && { REDIS_NAMESPACE: this.namespace }),
      ...(switches.redis &&
        !knows.redisNamespace &&
        knows.oldRedisNames && { RATE_LIMIT_NAMESPACE: this.namespace, PET_EVENTS_CHANNEL: `${this.namespace}pet-feed` }),
      ...(switches.trustedDocuments && knows.trustedDocuments && { TRUSTED_DOCUMENTS: this.manifest }),
      ...(testMode && { WEBHOOK_ALLOW_HTTP: WEBHOOK_ENV.WEBHOOK_ALLOW_HTTP, WEBHOOK_ALLOW_PRIVATE_TARGETS: WEBHOOK_ENV.WEBHOOK_ALLOW_PRIVATE_TARGETS }),
      ...(knows.webhooks && { WEBHOOK_DELIVERIES: String(switches.webhooks && testMode) }),
    };
  }

  /** Whether `directory`'s build, run with `switches`, delivers to the endpoint. */
  delivers(directory: string, switches: FeatureSwitches): boolean {
    return switches.webhooks && switches.testMode && buildKnows(directory).webhooks;
  }

  /**
   * Registers the endpoint (every pet) anew with this checkout's webhook CLI, removing the one before: its deliveries
   * start at the feed's head now, so no backlog of an earlier process or run is delivered in a measurement.
   */
  async freshEndpoint(): Promise<void> {
    await this.removeEndpoint();
    this.endpoint = await addWebhookEndpoint(this.options.root, this.options.databaseUrl, this.receiverUrl);
  }

  /** Removes the endpoint, if one is registered. */
  async removeEndpoint(): Promise<void> {
    if (this.endpoint === undefined) return;
    const id = this.endpoint;
    this.endpoint = undefined;
    await webhookCli(this.options.root, this.options.databaseUrl, ['remove', String(id)]);
  }

  /**
   * After a measured run of a system that delivers: waits until the endpoint has had every event (up to `timeoutMs`),
   * so that the dispatcher's backlog is delivered between runs, not during the next one; past the timeout, registers
   * the endpoint anew (the rest is dropped). A no-op without an endpoint.
   * @returns the events owed when the run ended (0: nothing to wait for) and whether the timeout passed.
   */
  async drain(timeoutMs: number): Promise<{ owed: number; timedOut: boolean }> {
    if (this.endpoint === undefined) return { owed: 0, timedOut: false };
    const waited = await waitUntilDelivered(this.options.databaseUrl, this.endpoint, timeoutMs);
    if (waited.timedOut) {
      this.options.log(`  webhook: ${waited.behind} events still owed after ${(waited.ms / 1000).toFixed(1)} s: the endpoint registered anew`);
      await this.freshEndpoint();
    } else if (waited.ms > 1000) this.options.log(`  webhook: the endpoint caught up ${(waited.ms / 1000).toFixed(1)} s after the run`);
    return { owed: waited.owedAtFirst, timedOut: waited.timedOut };
  }

  /** Deliveries the receiver has taken so far. */
  deliveries(): Promise<number> {
    return new Promise((resolve) => {
      const onMessage = (reply: WebhookReceiverReply) => {
        if (reply.type !== 'count') return;
        this.receiver.off('message', onMessage);
        resolve(reply.deliveries);
      };
      this.receiver.on('message', onMessage);
      this.receiver.send({ type: 'count' } satisfies WebhookReceiverRequest);
    });
  }

  /** Removes the endpoint, stops the receiver and deletes the manifest. */
  async close(): Promise<void> {
    try {
      await this.removeEndpoint();
    } finally {
      this.receiver.kill();
      rmSync(this.manifest, { force: true });
    }
  }
}
