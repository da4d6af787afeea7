import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { cleanEnv } from 'envalid';
import { ClientError, GraphQLClient, gql } from 'graphql-request';
import { type FormattedExecutionResult, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { CONFIG_SPEC, DEV_API_KEY_PATH } from '../config';
import { originOf } from '../http/landing-page.routes';

const EVENT_TIMEOUT_MS = 10_000;

/** Subscribes to `petCreated(status: pending)` (docs/subscriptions.md); `ws` because Node 20 has no global WebSocket. */
function subscribeToPendingPets(graphqlUrl: string, apiKey: string) {
  const client = createClient({
    url: graphqlUrl.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { Authorization: `Bearer ${apiKey}` },
    retryAttempts: 0,
  });
  const first = new Promise<FormattedExecutionResult<Record<string, unknown>, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no petCreated event within ${EVENT_TIMEOUT_MS / 1000} s`)), EVENT_TIMEOUT_MS);
    client.subscribe(
      { query: 'subscription NewPending { petCreated(status: pending) { id name categoryId status } }' },
      {
        next: (result) => {
          clearTimeout(timer);
          resolve(result);
        },
        error: (error: unknown) => {
          clearTimeout(timer);
          const closed = error as { code?: number; reason?: string };
          reject(closed.code ? new Error(`WebSocket closed ${closed.code}: ${closed.reason}`) : new Error(JSON.stringify(error)));
        },
        complete: () => undefined,
      },
    );
  });
  first.catch(() => undefined); // awaited later; a failure then is the demo's error
  return { first, dispose: () => client.dispose() };
}

/** The server: `--url`, else GRAPHQL_URL, else HOST and PORT as config.ts reads them; the key: API_KEY, else the dev key file. */
async function target(url: string | undefined): Promise<{ url: string; apiKey: string }> {
  const env = cleanEnv(process.env, { HOST: CONFIG_SPEC.HOST, PORT: CONFIG_SPEC.PORT });
  const graphqlUrl = url ?? process.env.GRAPHQL_URL ?? `${originOf(env.HOST, env.PORT)}/graphql`;
  const apiKey = process.env.API_KEY ?? (await readFile(DEV_API_KEY_PATH, 'utf8').catch(() => '')).trim();
  if (!apiKey) throw new Error(`set API_KEY (no ${DEV_API_KEY_PATH} here: create a key with npm run apikey -- create <name>)`);
  return { url: graphqlUrl, apiKey };
}

/** The server's answer to a refused request, without the request graphql-request adds to its message. */
function describe(error: unknown): string {
  if (!(error instanceof ClientError)) return (error as Error).message;
  const messages = error.response.errors?.map((e) => e.message).join('; ') ?? JSON.stringify(error.response.data);
  return `HTTP ${error.response.status}: ${messages}`;
}

/** `npm run demo:graphql`: every GraphQL operation through real clients, printed as JSON; exits 1 on any error. */
async function run(options: { url?: string }): Promise<void> {
  const { url, apiKey } = await target(options.url);
  const client = new GraphQLClient(url, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  const show = (operation: string, result: unknown) => process.stdout.write(`${operation}\n${JSON.stringify(result, null, 2)}\n\n`);

  const subscription = subscribeToPendingPets(url, apiKey);
  // graphql-ws does not acknowledge a subscribe: give the server a moment to start it before creating.
  await sleep(250);

  const created = await client.request<{ createPet: { id: string } }>(
    gql`
      mutation CreatePet($input: NewPetInput!) {
        createPet(input: $input) {
          id
          name
          categoryId
          status
        }
      }
    `,
    { input: { name: 'Biscuit', categoryId: 2, status: 'pending' } },
  );
  show('createPet(input: { name: "Biscuit", categoryId: 2, status: pending })', created);
  show(
    'pets(limit: 5)',
    await client.request(gql`
      {
        pets(limit: 5) {
          id
          name
          categoryId
          status
        }
      }
    `),
  );
  show(
    'pets(status: pending)',
    await client.request(gql`
      query Pending {
        pets(status: pending) {
          id
          name
          status
        }
      }
    `),
  );
  show(
    `pet(id: "${created.createPet.id}")  # deprecated`,
    await client.request(
      gql`
        query Pet($id: ID!) {
          pet(id: $id) {
            id
            name
          }
        }
      `,
      { id: created.createPet.id },
    ),
  );
  try {
    show('subscription { petCreated(status: pending) }  # over WebSocket, received after createPet', await subscription.first);
  } finally {
    await subscription.dispose();
  }
}

new Command('demo:graphql')
  .description(
    'Run every GraphQL operation (createPet, pets, pet, and a petCreated subscription) through real clients against a running server.\n' +
      `Key: API_KEY, else ${DEV_API_KEY_PATH} (written by the server on the embedded database).`,
  )
  .option('--url <url>', 'the GraphQL endpoint; default GRAPHQL_URL, else http://HOST:PORT/graphql with HOST and PORT as the server reads them')
  .showHelpAfterError()
  .action(run)
  .parseAsync()
  .catch((error: unknown) => {
    process.stderr.write(`demo:graphql failed: ${describe(error)}\n`);
    process.exit(1);
  });
