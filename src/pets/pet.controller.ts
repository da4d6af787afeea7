import type { FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { AppError } from '../errors/error-catalogue';
import { sendRestError } from '../errors/rest-error.handler';
import { rejectOtherMethods } from '../http/method-not-allowed';
import type { ListPetsArgs, NewPetInput } from './pet.inputs';
import { GET_PET_DEPRECATION } from './get-pet.deprecation';
import type { PetResolver } from './pet.resolver';

/** What the REST surface needs. */
export interface PetControllerOptions {
  petResolver: PetResolver;
  authenticate: onRequestAsyncHookHandler;
}

const DEPRECATION_HEADERS = {
  // RFC 9745: an RFC 9651 date, i.e. "@" and Unix seconds.
  Deprecation: `@${Math.floor(GET_PET_DEPRECATION.deprecatedAt.getTime() / 1000)}`,
  // RFC 8594: an HTTP-date.
  Sunset: GET_PET_DEPRECATION.sunsetAt.toUTCString(),
  Link: `<${GET_PET_DEPRECATION.successorPath}>; rel="successor-version"`,
};

/** Query values are strings; a decimal integer is passed on as a number so the input rules can judge it. */
function fromQueryValue(value: unknown): unknown {
  return typeof value === 'string' && /^-?[0-9]+$/.test(value) ? Number(value) : value;
}

function isJsonObject(body: unknown): body is Record<string, unknown> {
  return typeof body === 'object' && body !== null && !Array.isArray(body);
}

/**
 * The REST facade at `/v1` (spec "Endpoints"). Each handler only translates: query string,
 * path and body in; the PetResolver method (the same one GraphQL calls) does the work;
 * its result or AppError out as the spec's JSON. Every route runs the shared auth hook.
 */
export const petController: FastifyPluginAsync<PetControllerOptions> = async (app, { petResolver, authenticate }) => {
  app.setErrorHandler(sendRestError);

  app.get('/pets', { onRequest: authenticate }, async (request) => {
    const query = Object.fromEntries(
      Object.entries(request.query as Record<string, unknown>).map(([key, value]) => [key, fromQueryValue(value)]),
    );
    return petResolver.pets(query as unknown as ListPetsArgs);
  });

  app.post('/pets', { onRequest: authenticate }, async (request, reply) => {
    if (!isJsonObject(request.body)) {
      throw new AppError('BAD_USER_INPUT', 'Invalid input: the request body must be a JSON object (NewPet).');
    }
    const pet = await petResolver.createPet(request.body as unknown as NewPetInput);
    return reply.code(201).header('Location', `${app.prefix}/pets/${pet.id}`).send(pet);
  });

  app.get<{ Params: { petId: string } }>(
    '/pets/:petId',
    {
      onRequest: authenticate,
      // Set on every answer of this route, errors included.
      onSend: async (_request: FastifyRequest, reply: FastifyReply) => {
        reply.headers(DEPRECATION_HEADERS);
      },
    },
    async (request) => {
      const pet = await petResolver.pet({ id: request.params.petId });
      if (!pet) throw new AppError('NOT_FOUND', `No pet has id ${request.params.petId}.`);
      return pet;
    },
  );

  rejectOtherMethods(app, '/pets', ['GET', 'POST']);
  rejectOtherMethods(app, '/pets/:petId', ['GET']);
};
