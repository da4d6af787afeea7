import { SURFACE_PATHS } from '../surface-paths';

/** Removal date of getPet (spec "Versioning"), the one place it is written. */
const SUNSET_DAY = '2030-12-05';

/** The deprecation of getPet / `pet(id:)` (spec "getPet (deprecated)", "Versioning"). */
export const GET_PET_DEPRECATION = Object.freeze({
  /** When this gateway first flagged the operation deprecated (RFC 9745 `Deprecation`). */
  deprecatedAt: new Date('2026-11-22T00:00:00Z'),
  /** Removal date (RFC 8594 `Sunset`). */
  sunsetAt: new Date(`${SUNSET_DAY}T00:00:00Z`),
  /** The removal date as written in documentation: `YYYY-MM-DD`. */
  sunsetDay: SUNSET_DAY,
  /** The replacement operation over REST. */
  successorPath: SURFACE_PATHS.pets,
  /** Reason shown in the GraphQL schema. */
  graphqlReason: `Use \`pets(status:)\` instead. This field will be removed on ${SUNSET_DAY}.`,
});
