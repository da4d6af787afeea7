import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { ERROR_CATALOGUE, type ErrorCode } from '../errors/error-catalogue';
import { IDENTIFIER_SCHEMA, ListPetsArgs, NewPetInput, PetIdArgs } from '../pets/pet.inputs';

/**
 * JSON Schemas of the REST contract, derived from the code that enforces it (no second
 * hand-written copy): inputs from the class-validator rules of the input classes, defaults
 * from their property initialisers, the Pet from NewPet plus its id, the Error from the
 * error catalogue. The routes carry them; @fastify/swagger turns them into the OpenAPI
 * document, and Fastify serialises responses with them.
 *
 * A JSON Schema: the keywords this file reads are typed, any other passes through as is.
 */
interface Schema {
  [keyword: string]: unknown;
  type?: unknown;
  not?: Schema;
  default?: unknown;
  properties?: Record<string, Schema>;
  required?: string[];
}

// Its SchemaObject (openapi3-ts, not a direct dependency) seen as a Schema.
const fromRules = validationMetadatasToSchemas() as Record<string, Schema>;

/** The schema of an input class as the validator applies it: defaults filled, unknown properties refused. */
function inputSchema(type: new () => object): Schema {
  const schema = structuredClone(fromRules[type.name]);
  const defaults = new type() as Record<string, unknown>;
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    // @IsDefined adds `not: {type: null}`, which `type` already says.
    if (property.type && property.not?.type === 'null') delete property.not;
    if (defaults[name] !== undefined) property.default = defaults[name];
  }
  // A property with a default may be left out.
  schema.required = (schema.required ?? []).filter((name) => defaults[name] === undefined);
  if (schema.required.length === 0) delete schema.required;
  // validateInput() refuses every property its class does not declare.
  schema.additionalProperties = false;
  return schema;
}

const newPet = inputSchema(NewPetInput);

/** Shared schemas, registered with `app.addSchema` and listed in `components.schemas`. */
export const SHARED_SCHEMAS: Schema[] = [
  { $id: 'NewPet', description: 'A new animal (spec "NewPet").', ...newPet },
  {
    $id: 'Pet',
    description: 'An animal of the store (spec "Pet"): every field of NewPet plus the id; all four are always sent.',
    type: 'object',
    properties: {
      id: { ...IDENTIFIER_SCHEMA, description: 'Assigned by the service on creation.' },
      ...Object.fromEntries(Object.entries(newPet.properties ?? {}).map(([name, { default: _, ...rest }]) => [name, rest])),
    },
    required: ['id', ...Object.keys(newPet.properties ?? {})],
    additionalProperties: false,
  },
  { $id: 'Pets', description: 'A JSON array of Pet.', type: 'array', items: { $ref: 'Pet#' } },
  {
    $id: 'Error',
    description: 'Every error response (spec "Error").',
    type: 'object',
    properties: {
      code: { type: 'string', enum: Object.keys(ERROR_CATALOGUE), description: 'Machine-readable error code.' },
      message: { type: 'string', description: 'Human-readable description.' },
      status: { type: 'integer', description: 'The HTTP status code of the response.' },
    },
    required: ['code', 'message', 'status'],
    additionalProperties: false,
  },
];

/** Query string of listPets. */
export const LIST_PETS_QUERY = inputSchema(ListPetsArgs);

/** Path parameters of getPet: the REST name `petId` for PetIdArgs.id. */
export const PET_ID_PARAMS: Schema = {
  type: 'object',
  properties: { petId: { ...inputSchema(PetIdArgs).properties?.id, description: 'Identifier of the animal.' } },
  required: ['petId'],
};

/** Response headers, by name, for the route schemas. Each is sent on every such response, unless its description begins "Only when". */
export const HEADERS = {
  WWW_AUTHENTICATE: { 'WWW-Authenticate': { type: 'string', description: 'RFC 6750 Bearer challenge.' } },
  LOCATION: { Location: { type: 'string', description: 'Path of the created Pet, /v1/pets/{id}.' } },
  RATE_LIMIT: {
    'RateLimit-Policy': { type: 'string', description: 'draft-ietf-httpapi-ratelimit-headers-10: `"default";q=<requests>;w=<seconds>`.' },
    RateLimit: { type: 'string', description: 'draft-ietf-httpapi-ratelimit-headers-10: `"default";r=<remaining>;t=<seconds to reset>`.' },
  },
  NEXT_PAGE_LINK: {
    Link: {
      type: 'string',
      description: 'Only when more pets follow. RFC 8288: `</v1/pets?limit=20&after=…>; rel="next"`, the next page with the same `limit` and `status`.',
    },
  },
  RETRY_AFTER: { 'Retry-After': { type: 'integer', description: 'Seconds to wait before retrying.' } },
} as const;

/**
 * Error responses of a route, one per HTTP status, from the catalogue.
 *
 * @param codes - the catalogue codes the route can answer.
 * @param headers - extra response headers sent with every one of them (e.g. deprecation headers).
 * @returns a Fastify `schema.response` fragment: `{ [status]: { description, headers?, $ref: 'Error#' } }`.
 */
export function errorResponses(codes: ErrorCode[], headers: Record<string, Schema> = {}): Record<number, Schema> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_CATALOGUE[code].status, [...(byStatus.get(ERROR_CATALOGUE[code].status) ?? []), code]);
  return Object.fromEntries(
    [...byStatus].map(([status, sameStatus]) => {
      const allHeaders = {
        ...(status === 401 ? HEADERS.WWW_AUTHENTICATE : {}),
        ...(status === 429 ? { ...HEADERS.RETRY_AFTER, ...HEADERS.RATE_LIMIT } : {}),
        // Every code the catalogue gives a retryAfterSeconds is sent with Retry-After (AppError adds it).
        ...(sameStatus.some((code) => 'retryAfterSeconds' in ERROR_CATALOGUE[code]) ? HEADERS.RETRY_AFTER : {}),
        ...headers,
      };
      const description = sameStatus.map((code) => `${code}: ${ERROR_CATALOGUE[code].message}`).join(' ');
      return [status, { description, ...(Object.keys(allHeaders).length > 0 && { headers: allHeaders }), $ref: 'Error#' }];
    }),
  );
}
