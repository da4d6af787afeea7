import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { cleanEnv } from 'envalid';
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

/** A GraphQL answer with errors, or an HTTP status other than 200: the server's messages, without the request. */
class GraphQLRequestError extends Error {
  constructor(status: number, body: { errors?: Array<{ message: string }> } | undefined) {
    super(`HTTP ${status}: ${body?.errors?.map((e) => e.message).join('; ') ?? JSON.stringify(body)}`);
  }
}

/**
 * POSTs one operation (GraphQL over HTTP, application/json) with Node's fetch; the answer's `data`.
 * Throws GraphQLRequestError when the status is not 200 or the answer carries errors.
 */
async function request<T = unknown>(url: string, apiKey: string, query: string, variables?: Record<string, unknown>): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json' },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await response.json().catch(() => undefined)) as { data?: T; errors?: Array<{ message: string }> } | undefined;
  if (response.status !== 200 || !body?.data || body.errors?.length) throw new GraphQLRequestError(response.status, body);
  return body.data;
}

/** `npm run demo:graphql`: every GraphQL operation over HTTP (Node's fetch) and WebSocket (graphql-ws), printed as JSON; exits 1 on any error. */
async function run(options: { url?: string }): Promise<void> {
  const { url, apiKey } = await target(options.url);
  const query = <T = unknown>(document: string, variables?: Record<string, unknown>) => request<T>(url, apiKey, document, variables);
  const show = (operation: string, result: unknown) => process.stdout.write(`${operation}\n${JSON.stringify(result, null, 2)}\n\n`);

  const subscription = subscribeToPendingPets(url, apiKey);
  // graphql-ws does not acknowledge a subscribe: give the server a moment to start it before creating.
  await sleep(250);

  const created = await query<{ createPet: { id: string } }>(
    `
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
    await query(`
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
    await query(`
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
    await query(
      `
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
    'Run every GraphQL operation (createPet, pets, pet, and a petCreated subscription) over HTTP and WebSocket against a running server, with production dependencies only.\n' +
      `Key: API_KEY, else ${DEV_API_KEY_PATH} (written by the server on the embedded database).`,
  )
  .option('--url <url>', 'the GraphQL endpoint; default GRAPHQL_URL, else http://HOST:PORT/graphql with HOST and PORT as the server reads them')
  .showHelpAfterError()
  .action(run)
  .parseAsync()
  .catch((error: unknown) => {
    process.stderr.write(`demo:graphql failed: ${(error as Error).message}\n`);
    process.exit(1);
  });
