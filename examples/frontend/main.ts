import { setTimeout as sleep } from 'node:timers/promises';
import { settings } from '../settings';
import { createApolloClient } from './apollo';
import type { PetCreatedSubscription } from './gql/graphql';
import { CREATE_PET, PETS_PAGE, PET_CREATED } from './operations';

/** A full page: with the `__typename`s Apollo adds and every `pageInfo` field, it costs 705 of the 1,000 an operation may. */
const PAGE_SIZE = 100;

/** Polls `find` until it returns something; rejects after `timeoutMs`. */
async function waitFor<T>(what: string, find: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; await sleep(50)) {
    const found = find();
    if (found !== undefined) return found;
  }
  throw new Error(`no ${what} within ${timeoutMs / 1000} s`);
}

/**
 * As a browser would with a publishable key (API_KEY): lists the first page of pets (and the second, when there is
 * one), subscribes to `petCreated`; then the shop's own server, with its secret key (BACKEND_API_KEY, default API_KEY),
 * creates a pet, and the browser waits for its event. A publishable key cannot create pets (only a secret key holds
 * pets:write), so writes go through a server, never from the browser. Prints one line per step; exits 1 on any error.
 */
async function main(): Promise<void> {
  const { apiUrl, apiKey } = settings();
  const { apollo, ws } = createApolloClient(apiUrl, apiKey);
  // The same client set-up stands for the shop's server; it opens no WebSocket, as it subscribes to nothing.
  const backend = createApolloClient(apiUrl, process.env.BACKEND_API_KEY || apiKey);
  try {
    const { data } = await apollo.query({ query: PETS_PAGE, variables: { first: PAGE_SIZE } });
    const { edges, pageInfo } = data!.petsConnection;
    console.log(`page 1: ${edges.length} pets, more: ${pageInfo.hasNextPage}`);
    if (pageInfo.hasNextPage) {
      // What fetchMore does: to the network (the cache would answer with the pages it holds), and
      // relayStylePagination appends page 2 to page 1 in the cache.
      await apollo.query({ query: PETS_PAGE, variables: { first: PAGE_SIZE, after: pageInfo.endCursor }, fetchPolicy: 'network-only' });
      const cached = apollo.readQuery({ query: PETS_PAGE, variables: { first: PAGE_SIZE } });
      console.log(`page 2 read: the cache holds ${cached!.petsConnection.edges.length} pets`);
    }

    const announced: PetCreatedSubscription['petCreated'][] = [];
    const connected = new Promise<void>((resolve, reject) => {
      ws.on('connected', () => resolve());
      ws.on('closed', (event) => reject(new Error(`WebSocket closed: ${JSON.stringify(event, ['code', 'reason'])}`)));
    });
    const subscription = apollo.subscribe({ query: PET_CREATED }).subscribe({
      next: ({ data: event, error }) => (error ? console.error(`petCreated: ${error.message}`) : event && announced.push(event.petCreated)),
    });
    await connected;
    // graphql-ws does not acknowledge a subscribe: give the server a moment to start it.
    await sleep(250);

    const created = await backend.apollo.mutate({ mutation: CREATE_PET, variables: { input: { name: 'Pip', categoryId: 2 } } });
    const pet = created.data!.createPet;
    console.log(`created: ${JSON.stringify(pet)}`);
    const event = await waitFor('petCreated event', () => announced.find(({ id }) => id === pet.id));
    console.log(`petCreated: ${JSON.stringify(event)}`);
    subscription.unsubscribe();
  } finally {
    apollo.stop();
    backend.apollo.stop();
    await ws.dispose();
    await backend.ws.dispose();
  }
}

main().catch((error: unknown) => {
  console.error(`frontend example failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
