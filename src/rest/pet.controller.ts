import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { AppError } from '../errors/error-catalogue';
import { callerOf } from '../guard/request.guard';
import { rejectOtherMethods } from '../http/method-not-allowed';
import { GET_PET_DEPRECATION } from '../pets/get-pet.deprecation';
import type { PetService } from '../pets/pet.service';
import {
  CONDITIONAL_REQUEST_HEADERS,
  HEADERS,
  LIST_PETS_QUERY,
  OPENAPI_EXAMPLES,
  PET_ID_PARAMS,
  errorResponses,
  jsonResponse,
  notModifiedResponse,
  operationSecurity,
} from './openapi.schemas';
import { queryInput } from './query-input';
import { IDEMPOTENCY_LIMITS } from '../limits';
import { nextPageLink } from './next-page-link';

export interface PetControllerOptions {
  petService: PetService;
  /** The onRequest hook guarding every operation (guard/request.guard.ts): key, rate limit, caller. */
  guard: onRequestAsyncHookHandler;
}

const DEPRECATION: Record<string, { value: string; description: string }> = {
  // RFC 9745: an RFC 9651 date, i.e. "@" and Unix seconds.
  Deprecation: {
    value: `@${Math.floor(GET_PET_DEPRECATION.deprecatedAt.getTime() / 1000)}`,
    description: 'RFC 9745: deprecated since this date (`@` Unix seconds).',
  },
  // RFC 8594: an HTTP-date.
  Sunset: { value: GET_PET_DEPRECATION.sunsetAt.toUTCString(), description: 'RFC 8594: the removal date.' },
  Link: { value: `<${GET_PET_DEPRECATION.successorPath}>; rel="successor-version"`, description: 'RFC 8288: the replacement operation.' },
};
const DEPRECATION_HEADERS = Object.fromEntries(Object.entries(DEPRECATION).map(([name, { value }]) => [name, value]));
const DEPRECATION_HEADER_SCHEMAS = Object.fromEntries(
  Object.entries(DEPRECATION).map(([name, { value, description }]) => [name, { type: 'string', description: `${description} \`${value}\`` }]),
);
/** A page's fields, on its 200 and its 304 alike. */
const LIST_PETS_HEADERS = { ...HEADERS.NEXT_PAGE_LINK, ...HEADERS.CONDITIONAL, ...HEADERS.RATE_LIMIT, ...HEADERS.API_KEY_EXPIRES };
const GET_PET_HEADERS = { ...DEPRECATION_HEADER_SCHEMAS, ...HEADERS.CONDITIONAL, ...HEADERS.RATE_LIMIT, ...HEADERS.API_KEY_EXPIRES };

/**
 * The REST facade at `/v1` (spec "Endpoints"): handlers only translate; PetService validates.
 * The guard covers the whole scope of the operations, so a route added there cannot be left
 * public by mistake; only the 405 answers sit outside it.
 */
export const petController: FastifyPluginAsync<PetControllerOptions> = async (app, { petService, guard }) => {
  await app.register(petOperations, { petService, guard });
  rejectOtherMethods(app, '/pets', ['GET', 'HEAD', 'POST']);
  rejectOtherMethods(app, '/pets/:petId', ['GET', 'HEAD']);
};

const petOperations: FastifyPluginAsync<PetControllerOptions> = async (app, { petService, guard }) => {
  app.addHook('onRequest', guard);
  // Input is validated once, by PetService's rules; route schemas only document and serialise.
  app.setValidatorCompiler(() => () => true);

  app.get(
    '/pets',
    {
      schema: {
        operationId: 'listPets',
        security: operationSecurity('listPets'),
        summary: 'List animals, optionally by status',
        description:
          'Ascending id order, a page at a time: when more pets follow, the `Link` header holds the next page\'s URL (rel="next"), ' +
          'with the same `limit` and `status` and an `after` cursor; the last page has none. Unknown query parameters are refused.',
        tags: ['pets'],
        querystring: LIST_PETS_QUERY,
        headers: CONDITIONAL_REQUEST_HEADERS,
        response: {
          200: jsonResponse('A JSON array of Pet.', 'Pets#', { example: OPENAPI_EXAMPLES.pets }, LIST_PETS_HEADERS),
          ...notModifiedResponse(LIST_PETS_HEADERS),
          ...errorResponses(['BAD_USER_INPUT', 'UNAUTHENTICATED', 'FORBIDDEN', 'TOO_MANY_REQUESTS', 'INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE']),
        },
      },
      config: { conditionalGet: true },
    },
    async (request, reply) => {
      const query = queryInput(request.query);
      const page = await petService.listPets(query, callerOf(request));
      if (page.nextCursor !== null)
        reply.header('Link', nextPageLink(`${app.prefix}/pets`, { limit: page.limit, status: page.status, after: page.nextCursor }));
      return page.pets;
    },
  );

  app.post(
    '/pets',
    {
      schema: {
        operationId: 'createPet',
        security: operationSecurity('createPet'),
        summary: 'Add a new animal',
        tags: ['pets'],
        body: { $ref: 'NewPet#' },
        headers: {
          type: 'object',
          properties: {
            'Idempotency-Key': {
              type: 'string',
              minLength: 1,
              maxLength: IDEMPOTENCY_LIMITS.maxKeyLength,
              pattern: IDEMPOTENCY_LIMITS.keyPattern,
              description:
                'Makes retries safe: the same key with the same body returns the first response (same id, no second pet) ' +
                'for 24 hours; 409 while the first request is in flight; 422 with a different body.',
            },
          },
        },
        response: {
          201: jsonResponse(
            'Animal added.',
            'Pet#',
            { example: OPENAPI_EXAMPLES.pet },
            { ...HEADERS.LOCATION, ...HEADERS.IDEMPOTENT_REPLAYED, ...HEADERS.RATE_LIMIT, ...HEADERS.API_KEY_EXPIRES },
          ),
          ...errorResponses([
            'BAD_REQUEST',
            'BAD_USER_INPUT',
            'UNAUTHENTICATED',
            'FORBIDDEN',
            'PAYLOAD_TOO_LARGE',
            'UNSUPPORTED_MEDIA_TYPE',
            'IDEMPOTENCY_KEY_IN_USE',
            'IDEMPOTENCY_KEY_REUSED',
            'TOO_MANY_REQUESTS',
            'INTERNAL_SERVER_ERROR',
            'SERVICE_UNAVAILABLE',
            'GATEWAY_TIMEOUT',
          ]),
        },
      },
    },
    async (request, reply) => {
      const caller = callerOf(request);
      const { pet, replayed } = await petService.createPet(request.body, caller);
      if (caller.idempotencyKey !== undefined) reply.header('Idempotent-Replayed', String(replayed));
      return reply.code(201).header('Location', `${app.prefix}/pets/${pet.id}`).send(pet);
    },
  );

  app.get<{ Params: { petId: string } }>(
    '/pets/:petId',
    {
      schema: {
        operationId: 'getPet',
        security: operationSecurity('getPet'),
        summary: 'Return one animal by identifier (deprecated: use listPets with status)',
        description: `Deprecated; removed on ${GET_PET_DEPRECATION.sunsetDay}. Every answer carries Deprecation, Sunset and Link headers.`,
        tags: ['pets'],
        deprecated: true,
        params: PET_ID_PARAMS,
        headers: CONDITIONAL_REQUEST_HEADERS,
        response: {
          200: jsonResponse('The Pet.', 'Pet#', { example: OPENAPI_EXAMPLES.pet }, GET_PET_HEADERS),
          ...notModifiedResponse(GET_PET_HEADERS),
          ...errorResponses(
            ['BAD_USER_INPUT', 'UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', 'TOO_MANY_REQUESTS', 'INTERNAL_SERVER_ERROR', 'SERVICE_UNAVAILABLE'],
            DEPRECATION_HEADER_SCHEMAS,
          ),
          // Answered by the router before this operation runs, so without its headers.
          ...errorResponses(['URI_TOO_LONG']),
        },
      },
      config: { conditionalGet: true },
      // Set on every answer of this route, errors included.
      onSend: (_request: FastifyRequest, reply: FastifyReply, _payload: unknown, done: () => void) => {
        reply.headers(DEPRECATION_HEADERS);
        done();
      },
    },
    async (request) => {
      const pet = await petService.getPet({ id: request.params.petId }, callerOf(request));
      if (!pet) throw new AppError('NOT_FOUND', `No pet has id ${request.params.petId}.`);
      return pet;
    },
  );
};
