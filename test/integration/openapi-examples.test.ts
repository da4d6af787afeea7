import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ERROR_CATALOGUE, type ErrorCode } from '../../src/errors/error-catalogue';
import { OPENAPI_EXAMPLES } from '../../src/rest/openapi.schemas';
import { openapiSchemaErrors } from '../helpers/openapi-validator';

// The examples of contract/openapi.json, which Swagger UI shows and pre-fills (docs/explorers.md):
// every request and response body has one, each fits its schema, and each error
// example is the catalogue's own body for a code of that response's status.

const DOCUMENT = JSON.parse(readFileSync(path.resolve(__dirname, '..', '..', 'contract', 'openapi.json'), 'utf8'));

interface Media {
  schema: { $ref?: string };
  example?: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}

/** Every body of the document: where its media object is, the HTTP status (responses), and the media object. */
const bodies: { where: string[]; status?: number; media: Media }[] = Object.entries<Record<string, any>>(DOCUMENT.paths).flatMap(([template, methods]) =>
  Object.entries<any>(methods).flatMap(([method, operation]) => [
    ...Object.entries<Media>(operation.requestBody?.content ?? {}).map(([type, media]) => ({
      where: ['paths', template, method, 'requestBody', 'content', type],
      media,
    })),
    ...Object.entries<any>(operation.responses).flatMap(([status, response]) =>
      Object.entries<Media>(response.content ?? {}).map(([type, media]) => ({
        where: ['paths', template, method, 'responses', status, 'content', type],
        status: Number(status),
        media,
      })),
    ),
  ]),
);

/** The examples of a body: the media type's `example` or `examples`, else those of the component its schema names. */
function examplesOf(media: Media): { name: string; value: unknown }[] {
  if (media.example !== undefined) return [{ name: 'example', value: media.example }];
  if (media.examples) return Object.entries(media.examples).map(([name, { value }]) => ({ name, value }));
  const component = media.schema.$ref?.match(/^#\/components\/schemas\/(\w+)$/)?.[1];
  const examples: unknown[] = (component && DOCUMENT.components.schemas[component].examples) ?? [];
  return examples.map((value, index) => ({ name: `${component}.examples[${index}]`, value }));
}

describe('examples of contract/openapi.json', () => {
  test('when the bodies are listed, then there are the operations’ 9 request bodies and their responses', () => {
    // createPet, revokeCredentials, createApiKey, rollApiKey, createWebhookEndpoint, updateWebhookEndpoint,
    // rotateWebhookEndpointSecret, createWebhookRedelivery, createWebhookRecovery.
    expect(bodies.filter(({ status }) => status === undefined)).toHaveLength(9);
    expect(bodies.length).toBeGreaterThan(20);
  });

  test.each(bodies.map((body) => [body.where.slice(1).join(' '), body] as const))(
    'when %s is read, then it has an example that fits its schema',
    (_name, { where, media }) => {
      const examples = examplesOf(media);
      expect(examples.length).toBeGreaterThan(0);
      for (const { name, value } of examples) expect({ name, errors: openapiSchemaErrors([...where, 'schema'], value) }).toEqual({ name, errors: [] });
    },
  );

  test('when every component schema is read, then each has an example that fits it', () => {
    for (const [name, schema] of Object.entries<any>(DOCUMENT.components.schemas)) {
      expect({ name, count: schema.examples?.length ?? 0 }).toEqual({ name, count: 1 });
      expect({ name, errors: openapiSchemaErrors(['components', 'schemas', name], schema.examples[0]) }).toEqual({ name, errors: [] });
    }
  });

  test('when an error response is read, then each example is the catalogue’s body for a code of that status, named after it', () => {
    const errors = bodies.filter(({ status }) => status !== undefined && status >= 400);
    expect(errors.length).toBeGreaterThan(15);
    for (const { where, status, media } of errors) {
      const examples = examplesOf(media);
      for (const { name, value } of examples) {
        const { code } = value as { code: ErrorCode };
        expect({ where, value }).toEqual({ where, value: { code, message: ERROR_CATALOGUE[code].message, status } });
        if (examples.length > 1) expect(name).toBe(code);
      }
      // One example per code the description lists ("CODE: message"), in the same order.
      const described = [...(DOCUMENT.paths[where[1]][where[2]].responses[String(status)].description as string).matchAll(/\b([A-Z][A-Z_]+):/g)].map(
        (m) => m[1],
      );
      expect(examples.map(({ value }) => (value as { code: string }).code)).toEqual(described);
    }
  });

  test('when createPet’s request body is read, then its example is a NewPet a person would send, not a generated string', () => {
    const [body] = bodies.filter(({ status }) => status === undefined);
    expect(examplesOf(body.media).map(({ value }) => value)).toEqual([{ name: 'Rex', categoryId: 1, status: 'available' }]);
    expect(OPENAPI_EXAMPLES.newPet).toEqual({ name: 'Rex', categoryId: 1, status: 'available' });
  });
});
