/**
 * The V8 heap cap the service runs with (docs/configuration.md "Heap cap"), defined once: `npm start` and
 * the Docker image put {@link HEAP_CAP_NODE_OPTION} first in NODE_OPTIONS, so that an
 * operator's own `--max-old-space-size` in NODE_OPTIONS comes later and wins. Tests check that
 * both carry this value, and the bench starts the service with it. The document caches' budgets
 * (graphql/document-cache.limits.ts) are sized to fit well within it.
 */
export const HEAP_LIMITS = Object.freeze({
  /** Old-space limit in MiB: V8 collects harder as the heap nears it, and past it the process dies. */
  maxOldSpaceMb: 128,
});

/** The node option that sets the cap: `--max-old-space-size=128`. */
export const HEAP_CAP_NODE_OPTION = `--max-old-space-size=${HEAP_LIMITS.maxOldSpaceMb}`;
