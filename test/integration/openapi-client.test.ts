import createClient from 'openapi-fetch';
// Generated from contract/openapi.json by `npm test` and `npm run test:integration` (openapi-typescript); not committed.
// A breaking change to the document makes this file fail to compile.
import type { paths } from '../generated/openapi';
import { assertNoResponseViolations } from '../helpers/prism-proxy';
import { startTestApp, type TestApp } from '../helpers/test-app';

/** Every REST operation through a client generated from our OpenAPI document. */
describe('the generated OpenAPI client (openapi-typescript + openapi-fetch)', () => {
  let t: TestApp;
  let client: ReturnType<typeof createClient<paths>>;
  beforeAll(async () => {
    t = await startTestApp();
    // With TEST_THROUGH_PRISM=1, through Prism (which serves the document's paths without /v1), every answer checked by it.
    client = createClient<paths>({ baseUrl: t.prismUrl ?? `${t.url}/v1`, headers: { Authorization: `Bearer ${t.apiKey}` } });
    if (t.prismUrl) {
      client.use({
        onResponse: ({ request, response }) => {
          assertNoResponseViolations(`${request.method} ${request.url}`, response.headers);
        },
      });
    }
  });
  afterAll(() => t.close());

  test('when createPet, listPets and getPet are called, then each answers as typed', async () => {
    const created = await client.POST('/pets', { body: { name: 'Typed', categoryId: 5, status: 'sold' } });
    expect(created.response.status).toBe(201);
    const pet = created.data!;
    expect(pet).toEqual({ id: expect.any(Number), name: 'Typed', categoryId: 5, status: 'sold' });

    const listed = await client.GET('/pets', { params: { query: { limit: 10, status: 'sold' } } });
    expect(listed.data).toEqual([pet]);

    const fetched = await client.GET('/pets/{petId}', { params: { path: { petId: pet.id } } });
    expect(fetched.data).toEqual(pet);
    expect(fetched.response.headers.get('sunset')).toBe('Thu, 05 Dec 2030 00:00:00 GMT');
  });

  test('when an operation fails, then the typed error is the spec Error', async () => {
    const missing = await client.GET('/pets/{petId}', { params: { path: { petId: 987654321 } } });
    expect(missing.response.status).toBe(404);
    const error: { code: string; message: string; status: number } | undefined = missing.error;
    expect(error).toEqual({ code: 'NOT_FOUND', message: expect.any(String), status: 404 });

    const invalid = await client.GET('/pets', { params: { query: { limit: 0 } } });
    expect(invalid.error?.code).toBe('BAD_USER_INPUT');
  });
});
