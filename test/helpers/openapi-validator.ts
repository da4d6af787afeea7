import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';

/**
 * Checks REST responses against the committed OpenAPI document (contract/openapi.json,
 * which a contract test keeps equal to what the code generates). Used by the test helper
 * `request()`, so every /v1 response any test receives is checked, not a sample.
 */
const DOCUMENT = JSON.parse(readFileSync(path.resolve(__dirname, '..', '..', 'contract', 'openapi.json'), 'utf8'));
const BASE = '/v1';

const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addFormat('int64', { type: 'number', validate: (value: number) => Number.isSafeInteger(value) });
ajv.addSchema(DOCUMENT, 'openapi.json');

const operations = Object.entries<Record<string, any>>(DOCUMENT.paths).flatMap(([template, methods]) =>
  Object.entries<any>(methods).map(([method, operation]) => ({
    method: method.toUpperCase(),
    template,
    pattern: new RegExp(`^${BASE}${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
    operation,
  })),
);

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/**
 * Validates a value against a schema of the committed document.
 *
 * @param where - the JSON pointer of the schema in contract/openapi.json, as path segments
 *   (e.g. `['components', 'schemas', 'Pet']`).
 * @param value - the value to check.
 * @returns one line per mismatch (`<instance path> <message>`); empty when the value fits.
 */
export function openapiSchemaErrors(where: string[], value: unknown): string[] {
  const ref = `openapi.json#/${pointer(...where)}`;
  const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
  return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}`);
}

/** How many responses were checked in this process (reported by the contract test). */
export const validated = { count: 0 };

/**
 * @param method - HTTP method of the request.
 * @param url - the request path with its query string.
 * @param response - status, headers and parsed JSON body.
 * @throws Error describing every mismatch when the response breaks the document: an
 *   undocumented status, a body not matching the schema, a documented header missing, or a
 *   content type other than JSON. Requests to no documented operation are not checked.
 */
export function assertMatchesOpenapi(method: string, url: string, response: { status: number; headers: Headers; body: unknown }): void {
  const pathOnly = url.split('?')[0];
  const match = operations.find((o) => o.method === (method === 'HEAD' ? 'GET' : method) && o.pattern.test(pathOnly));
  if (!match || method === 'HEAD') return;
  const where = `${method} ${url} → ${response.status}`;
  const documented = match.operation.responses[String(response.status)];
  if (!documented) throw new Error(`${where}: status not documented for ${match.method} ${match.template}`);
  const problems: string[] = [];
  for (const [header, { description }] of Object.entries<{ description?: string }>(documented.headers ?? {})) {
    // "Only when …": a conditional header (e.g. listPets' Link); every other is always sent.
    if (!response.headers.has(header) && !description?.startsWith('Only when')) problems.push(`header ${header} missing`);
  }
  if (documented.content) {
    if (!/^application\/json\b/.test(response.headers.get('content-type') ?? '')) problems.push('content type is not application/json');
    const ref = `openapi.json#/${pointer('paths', match.template, match.method.toLowerCase(), 'responses', String(response.status), 'content', 'application/json', 'schema')}`;
    const validate = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
    if (!validate(response.body)) problems.push(...(validate.errors ?? []).map((e) => `body${e.instancePath} ${e.message}`));
  }
  if (problems.length > 0) throw new Error(`${where} breaks contract/openapi.json: ${problems.join('; ')}`);
  validated.count += 1;
}
