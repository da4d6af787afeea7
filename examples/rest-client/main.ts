import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import createClient from 'openapi-fetch';
import { settings } from '../settings';
import type { components, paths } from './openapi';

type Pet = components['schemas']['Pet'];
type NewPet = components['schemas']['NewPet'];
type Client = ReturnType<typeof createClient<paths>>;

const PAGE_SIZE = 10;

/**
 * The fetch of this example: the real one, except that it loses the first pet created, as
 * when a connection drops after the request went out. The server has created the pet; the client
 * only sees a network error. `lostAnswer` keeps what the server had answered, to compare.
 */
let lostAnswer: Pet | undefined;
async function flakyFetch(request: Request): Promise<Response> {
  const response = await fetch(request);
  if (request.method !== 'POST' || response.status !== 201 || lostAnswer) return response;
  lostAnswer = (await response.json()) as Pet;
  throw new TypeError('fetch failed (simulated: the answer was lost on its way back)');
}

/**
 * Creates a pet, retrying with the same Idempotency-Key after a network error or an answer that
 * says to retry (409 while the first attempt still runs, 503, 504): the server creates it at most once.
 */
async function createPet(client: Client, body: NewPet): Promise<Pet> {
  const key = randomUUID();
  for (let attempt = 1; ; attempt++) {
    try {
      const { data, error, response } = await client.POST('/pets', { params: { header: { 'Idempotency-Key': key } }, body });
      if (data) return data;
      if (![409, 503, 504].includes(response.status) || attempt === 3) throw new Error(`${error.code}: ${error.message}`);
      console.log(`attempt ${attempt}: ${response.status} ${error.code}, retrying`);
      await sleep(1000 * Number(response.headers.get('retry-after') ?? 1));
    } catch (error) {
      if (!(error instanceof TypeError) || attempt === 3) throw error;
      console.log(`attempt ${attempt}: ${error.message}; retrying with the same Idempotency-Key`);
    }
  }
}

/**
 * The target of a `Link` header's link with rel="next" (RFC 8288), resolved against `base`;
 * undefined when there is none, i.e. on the last page.
 */
function nextLink(header: string | null, base: string): URL | undefined {
  for (const link of header?.split(/,(?=\s*<)/) ?? []) {
    const [target, ...params] = link.split(';');
    const rel = params.map((param) => /^\s*rel\s*=\s*"?([^"]*)"?\s*$/i.exec(param)?.[1]).find((value) => value !== undefined);
    if (rel?.toLowerCase().split(/\s+/).includes('next')) return new URL(target.trim().replace(/^<|>$/g, ''), base);
  }
  return undefined;
}

/** Every pet, a page at a time, following each page's Link rel="next" until the last page, which has none. */
async function listAllPets(client: Client): Promise<{ pets: Pet[]; pages: number }> {
  const pets: Pet[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const { data, error, response } = await client.GET('/pets', { params: { query: { limit: PAGE_SIZE, after } } });
    if (error) throw new Error(`${error.code}: ${error.message}`);
    pets.push(...data);
    pages += 1;
    // The next page's URL keeps `limit` (and `status`) and adds the cursor `after`.
    after = nextLink(response.headers.get('link'), response.url)?.searchParams.get('after') ?? undefined;
  } while (after);
  return { pets, pages };
}

/**
 * Creates a pet whose first answer is lost, retries it with its Idempotency-Key, then lists every
 * pet to show there is one. Prints one line per step; exits 1 on any error.
 */
async function main(): Promise<void> {
  const { apiUrl, apiKey } = settings();
  const client = createClient<paths>({ baseUrl: `${apiUrl}/v1`, headers: { Authorization: `Bearer ${apiKey}` }, fetch: flakyFetch });
  const name = `Retried ${randomUUID().slice(0, 8)}`;
  const pet = await createPet(client, { name, categoryId: 3 });
  console.log(`created: ${JSON.stringify(pet)}`);
  if (pet.id !== lostAnswer?.id) throw new Error(`the retry returned pet ${pet.id}, the lost answer was pet ${lostAnswer?.id}`);
  console.log(`the retry returned the same pet as the lost answer: id ${pet.id}`);

  const { pets, pages } = await listAllPets(client);
  const named = pets.filter((listed) => listed.name === name).length;
  console.log(`listed ${pets.length} pets in ${pages} pages of at most ${PAGE_SIZE}; "${name}" appears ${named} time(s)`);
  if (named !== 1) throw new Error(`"${name}" was stored ${named} times`);
}

main().catch((error: unknown) => {
  console.error(`REST example failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
