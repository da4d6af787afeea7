import { HEAP_CAP_NODE_OPTION } from '../limits';

/**
 * Prints the NODE_OPTIONS the server is launched with (docs/configuration.md "Heap cap"): the heap cap of
 * src/limits.ts first, then the caller's NODE_OPTIONS, so a `--max-old-space-size` of theirs comes later and wins.
 * `npm start`, `npm run start:prod` and the Dockerfile launch with `NODE_OPTIONS="$(node dist/src/cli/node-options.cli.js)"`.
 */
process.stdout.write([HEAP_CAP_NODE_OPTION, process.env.NODE_OPTIONS ?? ''].join(' ').trim());
