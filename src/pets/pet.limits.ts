/** Limits of the pets operations, defined once for both surfaces (spec "Limits"). */
export const PET_LIMITS = Object.freeze({
  /** listPets `limit`: minimum, maximum and default (spec). */
  listMin: 1,
  listMax: 100,
  listDefault: 20,
  /** Longest cursor accepted (`after`); the cursors this service writes are about 24 to 40 characters. */
  cursorMaxLength: 100,
  /** Longest accepted name, in Unicode code points, as MySQL counts a VARCHAR's characters (spec leaves it open; see docs/decisions.md). */
  nameMaxLength: 100,
  /** Largest identifier accepted: integers beyond it cannot be represented exactly in JSON clients. */
  maxInt64: Number.MAX_SAFE_INTEGER,
});
