import 'reflect-metadata';
import { Command, Option } from 'commander';
import type { Logger } from 'pino';
import { KEY_KINDS, SCOPES, parseDuration, parseOrigin } from '../auth/api-key-policy';
import { ApiKeyAdministration, CLI_ADMINISTRATOR, apiKeyView } from '../auth/api-key-admin.service';
import { ApiKeyService } from '../auth/api-key.service';
import { AuditTrail } from '../audit/audit-trail';
import { KeyChangeChannel } from '../auth/key-change.channel';
import { loadConfig } from '../config';
import { RedisConnections } from '../redis/redis.connections';
import { withDatabase } from './cli-database';
import { USAGE_ERROR, byRule, positiveIntegerArgument, runCli } from './cli-options';
import { API_KEY_LIMITS } from '../limits';

/**
 * Runs `action` with an ApiKeyService on the configured database and the administration of keys over it (the same
 * operations as `/v1/admin/api-keys`, recorded in the audit trail as channel `cli`), then closes everything. With
 * REDIS_URL, the keys it revokes or rolls are announced to the running instances (docs/api-keys.md "Revocation"); a
 * failure to announce is one line on stderr, and they then learn it within API_KEY_CACHE_SECONDS.
 */
function withApiKeys(action: (apiKeys: ApiKeyService, keys: ApiKeyAdministration) => Promise<void>): Promise<void> {
  return withDatabase(async (database) => {
    const apiKeys = new ApiKeyService(database);
    const { url, keyChangesChannel } = loadConfig(process.env).redis;
    // One line on stderr per warning (a failed announcement, a refusal the audit trail could not record).
    const warn = (_fields: object, message?: string) => void process.stderr.write(`apikey: ${message}\n`);
    const log = { warn: warn as Logger['warn'], debug: () => undefined };
    const redis = url ? new RedisConnections(url, log) : null;
    apiKeys.changes.announceTo(redis && new KeyChangeChannel(redis, keyChangesChannel, log));
    try {
      await action(apiKeys, new ApiKeyAdministration(apiKeys, new AuditTrail(database, log)));
    } finally {
      await redis?.close();
    }
  });
}

const collect = (value: string, previous: string[] = []) => [...previous, byRule(parseOrigin)(value)];
const days = (ms: number) => `${ms / 86_400_000}d`;
/** A duration parsed by parseDuration (ms, whole seconds) as the operations take it. */
const seconds = (ms: number | undefined) => (ms === undefined ? undefined : ms / 1000);

const program = new Command('apikey')
  .description('Manage the API keys of the Pet Store gateway (uses DATABASE_URL, or the embedded database).')
  .showHelpAfterError()
  .exitOverride();

program
  .command('create')
  .description('create a key and print it alone on stdout; it is stored hashed and cannot be shown again')
  .argument('<name>', `who or what the key is for (1-${API_KEY_LIMITS.nameMaxLength} characters)`)
  .addOption(
    new Option('--kind <kind>', 'secret (servers) or publishable (browsers: read only, trusted documents)').choices(Object.keys(KEY_KINDS)).default('secret'),
  )
  .option('--scope <scopes>', `comma-separated, of ${SCOPES.join(', ')} (default: the kind's)`, (text: string) => text.split(','))
  .option('--origin <origin>', 'an allowed browser origin of a publishable key, e.g. https://app.example.com (repeatable)', collect)
  .option('--expires-in <duration>', `lifetime: a whole number with s, m, h or d (default ${days(API_KEY_LIMITS.defaultLifetimeMs)})`, byRule(parseDuration))
  .option('--no-expiry', 'never expire (secret keys only; discouraged)')
  .option('--rate-limit <n>', 'requests per rate-limit window (default RATE_LIMIT_MAX)', positiveIntegerArgument)
  .action(
    (name: string, flags: { kind: keyof typeof KEY_KINDS; scope?: string[]; origin?: string[]; expiresIn?: number; expiry: boolean; rateLimit?: number }) => {
      if (!flags.expiry && flags.expiresIn !== undefined) program.error('apikey: --expires-in and --no-expiry exclude each other', { exitCode: USAGE_ERROR });
      return withApiKeys(async (_apiKeys, keys) => {
        // The flags as createApiKey's body (NewApiKeyInput): durations in seconds.
        const { key } = await keys.create(CLI_ADMINISTRATOR, {
          name,
          kind: flags.kind,
          scopes: flags.scope,
          origins: flags.origin,
          expiresIn: flags.expiry ? seconds(flags.expiresIn) : null,
          rateLimit: flags.rateLimit,
        });
        process.stdout.write(`${key}\n`);
      });
    },
  );

program
  .command('roll')
  .description('make a new key with the same kind, scopes, origins and quota, print it alone on stdout; the old one expires after the overlap')
  .argument('<id>', 'the key id shown by list', positiveIntegerArgument)
  .option('--overlap <duration>', `how long the old key keeps working (default ${API_KEY_LIMITS.defaultRollOverlapMs / 3_600_000}h)`, byRule(parseDuration))
  .action((id: number, flags: { overlap?: number }) =>
    withApiKeys(async (_apiKeys, keys) => {
      const { created, previous } = await keys.roll(CLI_ADMINISTRATOR, String(id), { overlap: seconds(flags.overlap) });
      process.stdout.write(`${created.key}\n`);
      process.stderr.write(`key ${id} expires at ${previous.expiresAt}; the new key is ${created.id}\n`);
    }),
  );

program
  .command('list')
  .description('list keys: id, name, kind, scopes, last four characters, created, expires, last used, revoked')
  .option('--json', 'a JSON array of {id, name, kind, scopes, origins, createdAt, expiresAt, lastUsedAt, revokedAt}')
  .action((flags: { json?: boolean }) =>
    withApiKeys(async (apiKeys) => {
      const keys = await apiKeys.list();
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(keys.map(apiKeyView))}\n`);
        return;
      }
      const rows = keys.map((k) =>
        [
          k.id,
          k.name,
          k.kind,
          k.scopes.replaceAll(' ', ','),
          `…${k.keyHint}`,
          k.createdAt.toISOString(),
          k.expiresAt?.toISOString() ?? 'never',
          k.lastUsedAt?.toISOString() ?? 'never',
          k.revokedAt?.toISOString() ?? 'active',
        ].join('\t'),
      );
      process.stdout.write(['id\tname\tkind\tscopes\tkey\tcreated\texpires\tlast used\trevoked', ...rows].join('\n') + '\n');
    }),
  );

program
  .command('revoke')
  .description('revoke a key at once')
  .argument('<id>', 'the key id shown by list', positiveIntegerArgument)
  .action((id: number) =>
    withApiKeys(async (_apiKeys, keys) => {
      await keys.revoke(CLI_ADMINISTRATOR, String(id));
      process.stderr.write(`revoked key ${id}\n`);
    }),
  );

runCli(program, 'apikey');
