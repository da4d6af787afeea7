import { SURFACE_PATHS } from '../surface-paths';

/** Removal date of getPet (spec "Versioning"), written only here. */
const SUNSET_DAY = '2030-12-05';

/** The deprecation of getPet / `pet(id:)` (spec "getPet (deprecated)", "Versioning"). */
export const GET_PET_DEPRECATION = Object.freeze({
  /** RFC 9745 `Deprecation`. */
  deprecatedAt: new Date('2026-11-22T00:00:00Z'),
  /** RFC 8594 `Sunset`. */
  sunsetAt: new Date(`${SUNSET_DAY}T00:00:00Z`),
  sunsetDay: SUNSET_DAY,
  successorPath: SURFACE_PATHS.pets,
  graphqlReason: `Use \`pets(status:)\` instead. This field will be removed on ${SUNSET_DAY}.`,
});
