import { CriticalityLevel, diff } from '@graphql-inspector/core';
import { readFile } from 'node:fs/promises';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildSchema } from 'graphql';
import { diffSpecs } from 'openapi-diff';
import { emitSchemaDefinitionFile } from 'type-graphql';
import { parse as parseYaml } from 'yaml';
import { CONTRACT_FILES, renderOpenapi } from '../../src/cli/emit-contracts.cli';
import { buildApp } from '../../src/app';
import { openDatabase } from '../../src/database/open-database';
import { buildPetStoreSchema } from '../../src/graphql/schema';
import { request, startTestApp, testConfig, type TestApp } from '../helpers/test-app';

const ROOT = path.resolve(__dirname, '..', '..');
const read = (file: string) => readFile(path.join(ROOT, file), 'utf8');

describe('generated contracts (run `npm run contract` to update)', () => {
  test('when the GraphQL schema is generated from the code, then it equals schema.graphql', async () => {
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'schema-')), 'schema.graphql');
    await emitSchemaDefinitionFile(file, await buildPetStoreSchema());
    expect(await read(CONTRACT_FILES.graphql)).toBe(await readFile(file, 'utf8'));
  });

  test('when the OpenAPI document is generated from the code, then it equals contract/openapi.json', async () => {
    expect(await read(CONTRACT_FILES.openapi)).toBe(await renderOpenapi());
  });

  test('when schema.graphql is read, then it has the three operations with the agreed signatures', async () => {
    const sdl = await read(CONTRACT_FILES.graphql);
    expect(sdl).toMatch(/pets\(\s*(""".*"""\s*)?limit: Int = 20\s*(""".*"""\s*)?status: PetStatus\s*\): \[Pet!\]!/s);
    expect(sdl).toMatch(/\): Pet @deprecated\(reason: ".*pets\(status:\).*2030-12-05.*"\)/);
    expect(sdl).toMatch(/createPet\(input: NewPetInput!\): Pet!/);
  });
});

describe('the published document', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  test('when /v1/openapi.json and .yaml are fetched without a key, then both are the committed document', async () => {
    const committed = JSON.parse(await read(CONTRACT_FILES.openapi));
    const json = await request(t, 'GET', '/v1/openapi.json', { apiKey: null });
    expect(json.status).toBe(200);
    expect(json.body).toEqual(committed);
    const yaml = await request(t, 'GET', '/v1/openapi.yaml', { apiKey: null });
    expect(yaml.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(parseYaml(yaml.body)).toEqual(committed);
  });

  test('when the document is read, then it states the spec: 3.1, bearer auth, int64, limit bounds, the status enum, getPet deprecated', async () => {
    const doc = JSON.parse(await read(CONTRACT_FILES.openapi));
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.components.schemas.Pet.properties.id).toMatchObject({ type: 'integer', format: 'int64' });
    expect(doc.components.schemas.NewPet.properties.categoryId).toMatchObject({ type: 'integer', format: 'int64' });
    expect(doc.components.schemas.NewPet.properties.status.enum).toEqual(['available', 'pending', 'sold']);
    const limit = doc.paths['/pets'].get.parameters.find((p: { name: string }) => p.name === 'limit');
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 20 });
    const getPet = doc.paths['/pets/{petId}'].get;
    expect(getPet.deprecated).toBe(true);
    for (const status of ['200', '400', '401', '403', '404']) {
      expect(Object.keys(getPet.responses[status].headers)).toEqual(expect.arrayContaining(['Deprecation', 'Sunset', 'Link']));
    }
    expect(Object.keys(doc.paths['/pets'].post.responses).sort()).toEqual(['201', '400', '401', '403', '409', '413', '415', '422', '429', '500', '503', '504']);
  });

  test('when the document is read, then each operation states its scope and answers 403 insufficient_scope with WWW-Authenticate', async () => {
    const doc = JSON.parse(await read(CONTRACT_FILES.openapi));
    const scopes = Object.fromEntries(
      Object.values<Record<string, any>>(doc.paths).flatMap((methods) =>
        Object.values<any>(methods).map((operation) => [operation.operationId, operation.security]),
      ),
    );
    expect(scopes).toEqual({
      listPets: [{ bearerAuth: ['pets:read'] }],
      getPet: [{ bearerAuth: ['pets:read'] }],
      createPet: [{ bearerAuth: ['pets:write'] }],
      listEvents: [{ bearerAuth: ['pets:read'] }],
      listAuditEvents: [{ bearerAuth: ['keys:admin'] }],
      createApiKey: [{ bearerAuth: ['keys:admin'] }],
      listApiKeys: [{ bearerAuth: ['keys:admin'] }],
      getApiKey: [{ bearerAuth: ['keys:admin'] }],
      rollApiKey: [{ bearerAuth: ['keys:admin'] }],
      revokeApiKey: [{ bearerAuth: ['keys:admin'] }],
      listWebhookAttempts: [{ bearerAuth: ['webhooks:admin'] }],
      createWebhookRedelivery: [{ bearerAuth: ['webhooks:admin'] }],
      createWebhookRecovery: [{ bearerAuth: ['webhooks:admin'] }],
      getWebhookRecovery: [{ bearerAuth: ['webhooks:admin'] }],
      createWebhookEndpoint: [{ bearerAuth: ['webhooks:admin'] }],
      listWebhookEndpoints: [{ bearerAuth: ['webhooks:admin'] }],
      getWebhookEndpoint: [{ bearerAuth: ['webhooks:admin'] }],
      updateWebhookEndpoint: [{ bearerAuth: ['webhooks:admin'] }],
      rotateWebhookEndpointSecret: [{ bearerAuth: ['webhooks:admin'] }],
      deleteWebhookEndpoint: [{ bearerAuth: ['webhooks:admin'] }],
      // Public: revoking leaked keys takes none.
      revokeCredentials: [],
    });
    for (const methods of Object.values<Record<string, any>>(doc.paths)) {
      for (const operation of Object.values<any>(methods)) {
        if (operation.security.length === 0) continue;
        const forbidden = operation.responses['403'];
        expect(forbidden.description).toContain('insufficient_scope');
        expect(forbidden.description).toContain('WWW-Authenticate');
        expect(Object.keys(forbidden.headers)).toContain('WWW-Authenticate');
        expect(forbidden.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
        const success = Object.entries<any>(operation.responses).find(([status]) => status.startsWith('2'))![1];
        expect(success.headers['API-Key-Expires'].description).toMatch(/^Only when the API key expires/);
      }
    }
    for (const kind of ['secret', 'publishable', 'pst_sk_', 'pst_pk_']) expect(doc.components.securitySchemes.bearerAuth.description).toContain(kind);
  });

  test('when production and staging addresses are configured, then the document lists them as servers', async () => {
    const database = await openDatabase({ type: 'sqlite', path: ':memory:' });
    const app = await buildApp({
      config: testConfig({ PUBLIC_BASE_URL: 'https://api.example.com/v1', STAGING_BASE_URL: 'https://staging.example.com/v1' }),
      database,
    });
    try {
      expect((app.swagger() as { servers: unknown }).servers).toEqual([
        { url: '/v1', description: 'This server' },
        { url: 'https://api.example.com/v1', description: 'Production' },
        { url: 'https://staging.example.com/v1', description: 'Staging' },
      ]);
    } finally {
      await app.close();
      await database.close();
    }
  });

  test('when Swagger UI is opened, then it is served from this server without a key', async () => {
    const page = await fetch(`${t.url}/docs/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('swagger');
    const spec = await fetch(`${t.url}/docs/json`);
    expect(await spec.json()).toEqual(JSON.parse(await read(CONTRACT_FILES.openapi)));
  });
});

describe('breaking-change guard against the released contracts', () => {
  /**
   * openapi-diff reads OpenAPI 3.0; our document's 3.1-only constructs are the JSON Schema
   * `examples` array of its schemas (a media type's `examples` is a map), which becomes 3.0's
   * `example`, and a nullable `type: [T, "null"]`, which becomes 3.0's `type: T, nullable: true`;
   * otherwise it is compared as 3.0.3. Examples are never a breaking change.
   */
  async function openapiBreaking(released: object, current: object) {
    const as30 = (doc: object) =>
      JSON.stringify({ ...doc, openapi: '3.0.3' }, (_key, value: unknown) => {
        if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
        let schema = value as { examples?: unknown; type?: unknown };
        if (Array.isArray(schema.type) && schema.type.length === 2 && schema.type.includes('null')) {
          schema = { ...schema, type: schema.type.find((type) => type !== 'null'), nullable: true } as typeof schema;
        }
        if (!Array.isArray(schema.examples)) return schema;
        const { examples, ...rest } = schema as { examples: unknown[] };
        return { ...rest, example: examples[0] };
      });
    const result = await diffSpecs({
      sourceSpec: { content: as30(released), location: 'contract/openapi.released.json', format: 'openapi3' },
      destinationSpec: { content: as30(current), location: CONTRACT_FILES.openapi, format: 'openapi3' },
    });
    return result.breakingDifferencesFound ? result.breakingDifferences.map((d) => `${d.code}: ${d.action}`) : [];
  }

  function graphqlBreaking(released: string, current: string) {
    return diff(buildSchema(released), buildSchema(current)).then((changes) =>
      changes.filter((c) => c.criticality.level === CriticalityLevel.Breaking).map((c) => c.message),
    );
  }

  test('when the current OpenAPI document is compared with the released one, then nothing breaks', async () => {
    const released = JSON.parse(await read('contract/openapi.released.json'));
    expect(await openapiBreaking(released, JSON.parse(await read(CONTRACT_FILES.openapi)))).toEqual([]);
  });

  test('when the current GraphQL schema is compared with the released one, then nothing breaks', async () => {
    expect(await graphqlBreaking(await read('contract/schema.released.graphql'), await read(CONTRACT_FILES.graphql))).toEqual([]);
  });

  test('when a breaking change is made, then both guards report it', async () => {
    const released = JSON.parse(await read('contract/openapi.released.json'));
    const broken = structuredClone(released);
    delete broken.paths['/pets/{petId}'];
    expect(await openapiBreaking(released, broken)).toContainEqual(expect.stringMatching(/^path\.remove/));
    const sdl = await read('contract/schema.released.graphql');
    expect(await graphqlBreaking(sdl, sdl.replace('  pets(', '  animals('))).toContainEqual(expect.stringContaining("'pets' was removed"));
  });

  test('when the released snapshots are read, then CHANGELOG.md has an entry for their version', async () => {
    const { version } = JSON.parse(await read('contract/openapi.released.json')).info;
    expect(await read('CHANGELOG.md')).toMatch(new RegExp(`^## ${version.replace(/\./g, '\\.')} `, 'm'));
  });
});
