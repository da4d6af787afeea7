import 'reflect-metadata';
import { Command } from 'commander';
import { parseDuration } from '../auth/api-key-policy';
import { loadConfig } from '../config';
import type { WebhookEndpoint } from '../webhooks/webhook-endpoint.entity';
import { WebhookEndpointService } from '../webhooks/webhook-endpoint.service';
import { withDatabase } from './cli-database';
import { byRule, positiveIntegerArgument, runCli } from './cli-options';
import { WEBHOOK_LIMITS } from '../limits';

/** Runs `action` with the endpoints of the configured database, then closes it. */
function withEndpoints(action: (endpoints: WebhookEndpointService) => Promise<void>): Promise<void> {
  const { webhooks } = loadConfig(process.env);
  return withDatabase((database) => action(new WebhookEndpointService(database, webhooks)));
}

/** An endpoint as `list --json` prints it (docs/webhooks.md "Endpoints"): ISO 8601 times, null where none; never its secrets. */
function listed(endpoint: WebhookEndpoint) {
  const iso = (date: Date | null) => date?.toISOString() ?? null;
  return {
    id: endpoint.id,
    url: endpoint.url,
    status: endpoint.status,
    description: endpoint.description,
    state: endpoint.state,
    disabledReason: endpoint.disabledReason,
    cursor: endpoint.cursor,
    lastSuccessAt: iso(endpoint.lastSuccessAt),
    lastFailureAt: iso(endpoint.lastFailureAt),
    failuresInRow: endpoint.failuresInRow,
    nextAttemptAt: iso(endpoint.nextAttemptAt),
  };
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
      const { id, secret } = await endpoints.add({ url, ...flags });
      process.stdout.write(`${secret}\n`);
      process.stderr.write(`endpoint ${id} receives the events created from now on\n`);
    }),
  );

program
  .command('list')
  .description('list endpoints: id, url, status filter, state, cursor, last success, last failure, failures in a row')
  .option('--json', 'a JSON array of {id, url, status, description, state, disabledReason, cursor, lastSuccessAt, lastFailureAt, failuresInRow, nextAttemptAt}')
  .action((flags: { json?: boolean }) =>
    withEndpoints(async (endpoints) => {
      const all = (await endpoints.list()).map(listed);
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
  .command('remove')
  .description('delete an endpoint: no more deliveries to it')
  .argument('<id>', 'the endpoint id shown by list', positiveIntegerArgument)
  .action((id: number) =>
    withEndpoints(async (endpoints) => {
      if (!(await endpoints.remove(id))) throw new Error(`no endpoint has id ${id}`);
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
      const rotated = await endpoints.rotateSecret(id, flags.overlap);
      if (!rotated) throw new Error(`no endpoint has id ${id}`);
      process.stdout.write(`${rotated.secret}\n`);
      process.stderr.write(`the previous secret of endpoint ${id} signs too until ${rotated.until.toISOString()}\n`);
    }),
  );

program
  .command('enable')
  .description('enable a disabled endpoint: deliveries resume from where they stopped')
  .argument('<id>', 'the endpoint id shown by list', positiveIntegerArgument)
  .action((id: number) =>
    withEndpoints(async (endpoints) => {
      if (!(await endpoints.enable(id))) throw new Error(`no endpoint has id ${id}`);
      process.stderr.write(`enabled endpoint ${id}\n`);
    }),
  );

runCli(program, 'webhook');
