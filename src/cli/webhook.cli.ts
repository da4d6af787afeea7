import 'reflect-metadata';
import { Command } from 'commander';
import { parseDuration } from '../auth/api-key-policy';
import { loadConfig } from '../config';
import { pino } from 'pino';
import { AuditTrail, CLI_ACTOR } from '../audit/audit-trail';
import { OPERATOR_DISABLED } from '../webhooks/webhook-endpoint.entity';
import { WebhookEndpointService } from '../webhooks/webhook-endpoint.service';
import type { WebhookEndpointView } from '../webhooks/webhook-endpoint.view';
import { withDatabase } from './cli-database';
import { byRule, positiveIntegerArgument, runCli } from './cli-options';
import { ADMIN_LIMITS, WEBHOOK_LIMITS } from '../limits';

/** Runs `action` with the endpoints of the configured database, then closes it; changes are audited as the CLI's. */
function withEndpoints(action: (endpoints: WebhookEndpointService) => Promise<void>): Promise<void> {
  const { webhooks } = loadConfig(process.env);
  // The audit trail's warnings (a refusal it could not record) go to stderr, as JSON lines.
  const log = pino({ level: 'warn', base: null }, pino.destination(2));
  return withDatabase((database) => action(new WebhookEndpointService(database, webhooks, new AuditTrail(database, log))));
}

/**
 * Every endpoint as `list --json` prints it (docs/webhooks.md "Endpoints"): the view the API gives (webhookEndpointView),
 * and `failuresInRow`, the name `consecutiveFailures` had in this list before the API. Read a page at a time.
 */
async function listAll(endpoints: WebhookEndpointService): Promise<Array<WebhookEndpointView & { failuresInRow: number }>> {
  const all: Array<WebhookEndpointView & { failuresInRow: number }> = [];
  let after: string | undefined;
  do {
    const page = await endpoints.list({ limit: ADMIN_LIMITS.listMax, ...(after !== undefined && { after }) });
    all.push(...page.items.map((view) => ({ ...view, failuresInRow: view.consecutiveFailures })));
    after = page.nextCursor;
  } while (after !== undefined);
  return all;
}

const program = new Command('webhook')
  .description('Manage the webhook endpoints of the Pet Store gateway (uses DATABASE_URL, or the embedded database).')
  .showHelpAfterError()
  .exitOverride();

program
  .command('add')
  .description('store an endpoint and print its signing secret (whsec_…) alone on stdout; it is not shown again')
  .argument('<url>', `where to POST events: https (http only with WEBHOOK_ALLOW_HTTP=1), at most ${WEBHOOK_LIMITS.urlMaxLength} characters`)
  .option('--status <status>', 'only pets created with this status (available, pending or sold); every pet by default')
  .option('--description <text>', `what the endpoint is for (at most ${WEBHOOK_LIMITS.descriptionMaxLength} characters)`)
  .action((url: string, flags: { status?: string; description?: string }) =>
    withEndpoints(async (endpoints) => {
      const { id, secret } = await endpoints.create({ url, ...flags }, CLI_ACTOR);
      process.stdout.write(`${secret}\n`);
      process.stderr.write(`endpoint ${id} receives the events created from now on\n`);
    }),
  );

program
  .command('list')
  .description('list endpoints: id, url, status filter, state, cursor, last success, last failure, failures in a row')
  .option(
    '--json',
    'a JSON array of {id, url, status, description, createdAt, enabled, state, disabledReason, lastSuccessAt, lastFailureAt, consecutiveFailures, ' +
      'nextAttemptAt, cursor, lag, failuresInRow}',
  )
  .action((flags: { json?: boolean }) =>
    withEndpoints(async (endpoints) => {
      const all = await listAll(endpoints);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(all)}\n`);
        return;
      }
      const rows = all.map((e) =>
        [
          e.id,
          e.url,
          e.status ?? 'all',
          e.disabledReason ? `disabled (${e.disabledReason})` : e.state,
          e.cursor,
          e.lastSuccessAt ?? 'never',
          e.lastFailureAt ?? 'never',
          e.failuresInRow,
        ].join('\t'),
      );
      process.stdout.write(['id\turl\tstatus\tstate\tcursor\tlast success\tlast failure\tfailures in a row', ...rows].join('\n') + '\n');
    }),
  );

program
  .command('update')
  .description('change an endpoint: its URL (checked as by add; the cursor stays), its status filter, its description')
  .argument('<id>', 'the endpoint id shown by list', positiveIntegerArgument)
  .option('--url <url>', 'the new URL, by the rules of add')
  .option('--status <status>', 'only pets created with this status from now on (available, pending or sold)')
  .option('--no-status', 'every pet again')
  .option('--description <text>', `what the endpoint is for (at most ${WEBHOOK_LIMITS.descriptionMaxLength} characters)`)
  .option('--no-description', 'no description')
  .action((id: number, flags: { url?: string; status?: string | false; description?: string | false }) =>
    withEndpoints(async (endpoints) => {
      // commander gives `false` for --no-…: the API's null, which clears.
      const patch = Object.fromEntries(Object.entries(flags).map(([name, value]) => [name, value === false ? null : value]));
      await endpoints.update(id, patch, CLI_ACTOR);
      process.stderr.write(`updated endpoint ${id}\n`);
    }),
  );

program
  .command('remove')
  .description('delete an endpoint: no more deliveries to it')
  .argument('<id>', 'the endpoint id shown by list', positiveIntegerArgument)
  .action((id: number) =>
    withEndpoints(async (endpoints) => {
      await endpoints.delete(id, CLI_ACTOR);
      process.stderr.write(`removed endpoint ${id}\n`);
    }),
  );

program
  .command('rotate-secret')
  .description('give an endpoint a new signing secret, printed alone on stdout; the old one keeps signing too during the overlap')
  .argument('<id>', 'the endpoint id shown by list', positiveIntegerArgument)
  .option(
    '--overlap <duration>',
    `how long the old secret keeps signing: a whole number with s, m, h or d (default ${WEBHOOK_LIMITS.defaultRotateOverlapMs / 3_600_000}h)`,
    byRule(parseDuration),
  )
  .action((id: number, flags: { overlap?: number }) =>
    withEndpoints(async (endpoints) => {
      const rotated = await endpoints.rotateSecret(id, flags.overlap === undefined ? {} : { overlap: flags.overlap / 1000 }, CLI_ACTOR);
      process.stdout.write(`${rotated.secret}\n`);
      process.stderr.write(`the previous secret of endpoint ${id} signs too until ${rotated.previousSecretsUntil}\n`);
    }),
  );

program
  .command('enable')
  .description('enable a disabled endpoint: deliveries resume from where they stopped')
  .argument('<id>', 'the endpoint id shown by list', positiveIntegerArgument)
  .action((id: number) =>
    withEndpoints(async (endpoints) => {
      await endpoints.update(id, { enabled: true }, CLI_ACTOR);
      process.stderr.write(`enabled endpoint ${id}\n`);
    }),
  );

program
  .command('disable')
  .description(`disable an endpoint (reason "${OPERATOR_DISABLED}"): no deliveries until enable resumes them from where they stopped`)
  .argument('<id>', 'the endpoint id shown by list', positiveIntegerArgument)
  .action((id: number) =>
    withEndpoints(async (endpoints) => {
      await endpoints.update(id, { enabled: false }, CLI_ACTOR);
      process.stderr.write(`disabled endpoint ${id}\n`);
    }),
  );

runCli(program, 'webhook');
