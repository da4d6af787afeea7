import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  API_KEY_CACHE,
  API_KEY_LIMITS,
  FOLLOWER_LIMITS,
  DATABASE_DEADLINES,
  DOCUMENT_CACHE_LIMITS,
  HTTP_LIMITS,
  IDEMPOTENCY_LIMITS,
  MIGRATION_LOCK,
  PET_FEED_LIMITS,
  PET_LIMITS,
  QUERY_LIMITS,
  SUBSCRIPTION_LIMITS,
  WEBHOOK_LIMITS,
} from '../../src/limits';
import { CONFIG_SPEC } from '../../src/config';

const docs = (name: string) => readFileSync(path.join(__dirname, '..', '..', 'docs', name), 'utf8');

/** The rows of the first Markdown table under `## heading`: first cell → the rest of the row. */
function tableRows(markdown: string, heading: string): Map<string, string> {
  const section = markdown.split(`\n## ${heading}\n`)[1]?.split('\n## ')[0];
  if (!section) throw new Error(`no section "${heading}"`);
  const rows = section.split('\n').filter((line) => line.startsWith('| ') && !line.startsWith('| Limit'));
  return new Map(rows.map((row) => [row.split(' | ')[0].slice(2), row.split(' | ').slice(1).join(' | ')]));
}

const kib = (bytes: number) => `${bytes / 1024} KiB`;
const mib = (bytes: number) => `${bytes / 1024 / 1024} MiB`;
const seconds = (ms: number) => `${ms / 1000} s`;
const thousands = (n: number) => n.toLocaleString('en-US');

/** What each row of docs/security.md "Limits" must state, from src/limits.ts. */
const SECURITY_ROWS: Record<string, string[]> = {
  'Webhook attempt': [
    `${seconds(WEBHOOK_LIMITS.attemptTimeoutMs)} from connection`,
    `read up to ${kib(WEBHOOK_LIMITS.responseBodyBytes)}`,
    `${WEBHOOK_LIMITS.maxConcurrentEndpoints} endpoints delivered to at once`,
    `run out within ${WEBHOOK_LIMITS.leaseSeconds} s`,
    `honoured up to ${WEBHOOK_LIMITS.maxRetryAfterSeconds / 3600} h`,
    `${WEBHOOK_LIMITS.secretBytes} random bytes`,
  ],
  'API key': [`(${seconds(API_KEY_CACHE.ttlMs)})`, `LRUs of ${thousands(API_KEY_CACHE.maxEntries)} keys`],
  'Requests per API key': [
    `${CONFIG_SPEC.RATE_LIMIT_MAX.default} per ${CONFIG_SPEC.RATE_LIMIT_WINDOW_SECONDS.default} s`,
    `${PET_LIMITS.listMax} pets`,
    `key-wide ceiling of ${API_KEY_LIMITS.publishableCeilingFactor} times it`,
  ],
  'Requests per IP address without a valid key': [
    `${CONFIG_SPEC.RATE_LIMIT_UNAUTHENTICATED_MAX.default} per ${CONFIG_SPEC.RATE_LIMIT_WINDOW_SECONDS.default} s`,
    `in the last ${API_KEY_CACHE.knownMs === 3_600_000 ? 'hour' : seconds(API_KEY_CACHE.knownMs)}`,
  ],
  'GraphQL operation cost': [
    `| ${QUERY_LIMITS.maxCost}.`,
    `costs at least ${QUERY_LIMITS.databaseFieldMinCost}`,
    `at most ${QUERY_LIMITS.maxCost / QUERY_LIMITS.databaseFieldMinCost} times`,
  ],
  'GraphQL mutations': [`${QUERY_LIMITS.maxMutations} \`createPet\` per operation`, `the maximum is ${QUERY_LIMITS.maxMutations}.`],
  'GraphQL depth, aliases, directives (GraphQL Armor)': [
    `depth ${QUERY_LIMITS.maxDepth} in fields`,
    `${QUERY_LIMITS.maxAliases} aliases`,
    `${QUERY_LIMITS.maxDirectives} directives`,
    `Query depth limit of ${QUERY_LIMITS.maxDepth} exceeded, found ${QUERY_LIMITS.maxDepth + 1}.`,
  ],
  'GraphQL tokens (graphql-js parser)': [`| ${QUERY_LIMITS.maxTokens} |`],
  'GraphQL document caches, in bytes (`src/limits.ts`)': [
    `(Apollo's document store) ${mib(DOCUMENT_CACHE_LIMITS.documentStoreBytes)}`,
    `compiled operations ${mib(DOCUMENT_CACHE_LIMITS.compiledOperationBytes)}`,
    `persisted queries ${mib(DOCUMENT_CACHE_LIMITS.persistedQueryBytes)}`,
    `operation prices ${mib(DOCUMENT_CACHE_LIMITS.priceBytes)}`,
    `${mib(Object.values(DOCUMENT_CACHE_LIMITS).reduce((sum, bytes) => sum + bytes, 0))}, a fifth of the heap cap`,
  ],
  'GraphQL subscriptions (WebSocket)': [
    `${SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection} at once per connection`,
    `${FOLLOWER_LIMITS.maxStreamsPerKey} connections per API key`,
    `a connection costs ${SUBSCRIPTION_LIMITS.connectionCost} request`,
  ],
  'WebSockets of one address not yet authenticated': [
    `${SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress} at once`,
    `for up to ${seconds(SUBSCRIPTION_LIMITS.connectionInitWaitMs)}`,
    `Retry-After: ${SUBSCRIPTION_LIMITS.connectionInitWaitMs / 1000}`,
  ],
  'Streams of the change feed (SSE and WebSocket)': [
    `${FOLLOWER_LIMITS.maxStreamsPerKey} streams per key per instance, SSE and WebSocket together`,
    `${kib(FOLLOWER_LIMITS.pauseAtBytes)} waiting, then the stream takes no more events`,
    `never more than ${mib(FOLLOWER_LIMITS.maxBufferedBytes)} per stream`,
    `cut after ${seconds(FOLLOWER_LIMITS.stalledReaderMs)} without reading`,
  ],
  'Change-feed events kept in memory': [
    `the latest ${PET_FEED_LIMITS.recentEvents.toLocaleString('en-US')} per instance`,
    `from the table, ${PET_FEED_LIMITS.replayBatch} at a time`,
  ],
  'REST body / GraphQL body': [`${kib(HTTP_LIMITS.restBodyBytes)} / ${kib(HTTP_LIMITS.graphqlBodyBytes)}`],
  'Request head': [kib(HTTP_LIMITS.maxHeaderBytes)],
  'Path segment (`petId`)': [`${HTTP_LIMITS.maxParamLength} characters`],
  'Idempotency keys': [
    `1-${IDEMPOTENCY_LIMITS.maxKeyLength} printable ASCII`,
    `kept ${IDEMPOTENCY_LIMITS.retentionMs / 3_600_000} h`,
    IDEMPOTENCY_LIMITS.purgeIntervalMs === 3_600_000 ? 'purged (hourly)' : 'purged',
  ],
  'Whole request received within': [
    `| ${seconds(HTTP_LIMITS.requestTimeoutMs)}, head and body`,
    `checked every ${HTTP_LIMITS.timeoutCheckIntervalMs === 1000 ? 'second' : seconds(HTTP_LIMITS.timeoutCheckIntervalMs)}`,
    `Keep-Alive: timeout=${HTTP_LIMITS.keepAliveTimeoutMs / 1000}`,
  ],
};

/** What each row of docs/subscriptions.md "Limits" must state. */
const SUBSCRIPTION_ROWS: Record<string, string[]> = {
  'Subscriptions at once per connection': [`| ${SUBSCRIPTION_LIMITS.maxSubscriptionsPerConnection} |`],
  'Open connections per API key, per instance': [`| ${FOLLOWER_LIMITS.maxStreamsPerKey}, SSE streams of \`GET /v1/events\` and WebSockets together`],
  '`connection_init` within': [`${seconds(SUBSCRIPTION_LIMITS.connectionInitWaitMs)} of the upgrade`],
  'Sockets of one address (`TRUST_PROXY` applied) upgraded but not yet authenticated': [
    `| ${SUBSCRIPTION_LIMITS.maxPendingConnectionsPerAddress};`,
    `Retry-After: ${SUBSCRIPTION_LIMITS.connectionInitWaitMs / 1000}`,
  ],
  'Keep-alive': [`a ping every ${seconds(SUBSCRIPTION_LIMITS.keepAliveMs)}`],
  'Bytes waiting for a peer that does not read': [
    `${kib(FOLLOWER_LIMITS.pauseAtBytes)}, then its subscriptions take no more events`,
    `never more than ${mib(FOLLOWER_LIMITS.maxBufferedBytes)} per socket`,
    `at most ${mib(FOLLOWER_LIMITS.maxBufferedBytes * FOLLOWER_LIMITS.maxStreamsPerKey)} per API key`,
    `close 1008 after ${seconds(FOLLOWER_LIMITS.stalledReaderMs)} without reading`,
  ],
  'Message size': [`${kib(SUBSCRIPTION_LIMITS.maxMessageBytes)} (as the GraphQL HTTP body)`],
};

describe.each([
  ['docs/security.md', 'security.md', SECURITY_ROWS],
  ['docs/subscriptions.md', 'subscriptions.md', SUBSCRIPTION_ROWS],
])('%s "Limits"', (_label, file, expected) => {
  const rows = tableRows(docs(file), 'Limits');

  test('when the table is read, then it has exactly the rows checked here', () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(expected).sort());
  });

  test.each(Object.entries(expected))('when the row "%s" is read, then it states the values of src/limits.ts', (row, phrases) => {
    for (const phrase of phrases) expect(`| ${rows.get(row)} |`).toContain(phrase);
  });
});

describe('the other limits docs state', () => {
  test('when docs/failures.md is read, then it states the database deadlines', () => {
    const failures = docs('failures.md');
    expect(failures).toContain(`share one ${seconds(DATABASE_DEADLINES.callMs)} deadline`);
    expect(failures).toContain(`may take ${seconds(DATABASE_DEADLINES.connectMs)}`);
  });

  test('when docs/configuration.md and docs/operations.md are read, then they state the defaults and the migration lock', () => {
    expect(docs('configuration.md')).toContain(`| \`DATABASE_REPLICA_MAX_LAG_SECONDS\` | \`${DATABASE_DEADLINES.replicaMaxLagSeconds}\` |`);
    expect(docs('configuration.md')).toContain(`| \`API_KEY_CACHE_SECONDS\` | \`${API_KEY_CACHE.ttlMs / 1000}\` |`);
    expect(docs('operations.md')).toContain(`frees the lock within ${MIGRATION_LOCK.leaseSeconds} s`);
  });
});
