/**
 * The folder rules of src/ (and of the client examples), checked by `npm run lint` and proved by test/system/dependency-rules.test.ts.
 * Layers, top to bottom; a module imports its own layer or lower ones, never a higher one:
 * composition, surfaces (rest, graphql), shared HTTP plumbing, features, platform, base.
 */
const COMPOSITION = '^src/(app|main|config|service)\\.ts$|^src/cli/';
// The layer rules leave config.ts (composition) to the one rule about it, so an import of it is reported once.
const ABOVE_ALL_BUT_CONFIG = '^src/(app|main|service)\\.ts$|^src/cli/';
const SURFACES = '^src/(rest|graphql)/';
const HTTP = '^src/(http|guard|following)/';
const FEATURES = '^src/(pets|auth|idempotency|events|webhooks|audit)/';
const PLATFORM = '^src/(observability|validation|net|redis)/';
const BASE = '^src/(errors|database)/|^src/(limits|surface-paths)\\.ts$';
const LAYERS = [COMPOSITION, SURFACES, HTTP, FEATURES, PLATFORM, BASE];

/** HTTP servers, GraphQL servers and execution, and Redis: what the pet operations never reach. */
const TRANSPORT = '(^|/)node_modules/(fastify|@fastify/[^/]+|@apollo/[^/]+|@as-integrations/[^/]+|graphql|ioredis)/';

/** `from` may not import `to`: an error. */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    forbid('no-circular', 'An import circle: the modules on it cannot be understood, tested or loaded one without the other.', {}, { circular: true }),
    forbid('not-to-test', 'Tests are not part of the product.', { path: '^src/' }, { path: '^test/' }),
    forbid(
      'bench-only-to-support',
      'The benchmark shares test/support/ (MariaDB topologies, admin, free ports) with the tests, and nothing else of them.',
      { path: '^bench/' },
      { path: '^test/', pathNot: '^test/support/' },
    ),
    forbid(
      'support-stands-alone',
      'test/support/ serves the tests and the benchmark alike, so it imports neither.',
      { path: '^test/support/' },
      { path: '^(test/(?!support/)|bench/)' },
    ),
    forbid(
      'src-only-production-dependencies',
      'The product runs after `npm prune --omit=dev` (docs/operations.md "Production install"): what it loads is in "dependencies" or Node itself. Types are erased.',
      { path: '^src/' },
      { dependencyTypes: ['npm-dev', 'npm-no-pkg', 'npm-unknown'], dependencyTypesNot: ['type-only'] },
    ),
    forbid('src-not-to-bench', 'The product does not depend on its benchmark.', { path: '^src/' }, { path: '^bench/' }),
    forbid('not-to-examples', 'The client examples are not part of the product or the benchmark.', { path: '^(src|bench)/' }, { path: '^examples/' }),
    forbid(
      'examples-only-clients',
      'An example is a client of the API: it imports packages and examples/, never the server, its tests or the benchmark.',
      { path: '^examples/' },
      { path: '^(src|test|bench)/' },
    ),
    forbid('in-a-layer', 'Every folder of src/ belongs to a layer: add a new one to the layers of this file.', { path: '^src/', pathNot: LAYERS }, {}),
    forbid('surfaces-not-up', 'The REST and GraphQL adapters are composed by app.ts, not the other way.', { path: SURFACES }, { path: ABOVE_ALL_BUT_CONFIG }),
    forbid('rest-not-to-graphql', 'The two surfaces are independent adapters over the same operations.', { path: '^src/rest/' }, { path: '^src/graphql/' }),
    forbid('graphql-not-to-rest', 'The two surfaces are independent adapters over the same operations.', { path: '^src/graphql/' }, { path: '^src/rest/' }),
    forbid('http-not-up', 'The shared HTTP plumbing serves both surfaces and knows neither.', { path: HTTP }, { path: [ABOVE_ALL_BUT_CONFIG, SURFACES] }),
    forbid(
      'features-not-up',
      'The pet operations, auth, idempotency, pet events, webhooks and the audit trail know no transport.',
      { path: FEATURES },
      { path: [ABOVE_ALL_BUT_CONFIG, SURFACES, HTTP] },
    ),
    forbid(
      'platform-not-up',
      'Logs, metrics, health, shutdown and validation serve the features and know none.',
      { path: PLATFORM },
      { path: [ABOVE_ALL_BUT_CONFIG, SURFACES, HTTP, FEATURES] },
    ),
    forbid(
      'base-not-up',
      'Errors and the database depend on no feature or surface.',
      { path: BASE },
      { path: [ABOVE_ALL_BUT_CONFIG, SURFACES, HTTP, PLATFORM] },
    ),
    forbid(
      'base-not-to-features',
      'Errors and the database depend on no feature.',
      { path: BASE, pathNot: '^src/database/data-source\\.ts$' },
      { path: FEATURES },
    ),
    forbid(
      'data-source-only-entities',
      "The data source lists TypeORM's entities, and imports nothing else of the features.",
      { path: '^src/database/data-source\\.ts$' },
      { path: FEATURES, pathNot: '\\.entity\\.ts$' },
    ),
    forbid(
      'pets-no-transport',
      "The pet operations know no HTTP server, GraphQL server or GraphQL execution (type-graphql's decorators are allowed).",
      { path: '^src/pets/' },
      { path: '(^|/)node_modules/(fastify|@fastify/[^/]+|@apollo/[^/]+|@as-integrations/[^/]+|graphql)/' },
    ),
    forbid(
      'operations-no-transport',
      'The pet operations, with everything they reach, know no HTTP server, GraphQL server or execution, or Redis (docs/architecture.md).',
      { path: '^src/pets/pet\\.service\\.ts$' },
      { path: TRANSPORT, reachable: true },
    ),
    forbid(
      'operations-no-type-graphql',
      'The pet operations use no type-graphql: resolvers and their context are the GraphQL adapter.',
      { path: '^src/pets/pet\\.service\\.ts$' },
      { path: '(^|/)node_modules/type-graphql/' },
    ),
    forbid(
      'services-no-transport',
      'A service or repository imports neither HTTP nor GraphQL code.',
      { path: '\\.(service|repository)\\.ts$' },
      { path: TRANSPORT },
    ),
    forbid(
      'adapters-through-operations',
      'A resolver or controller reaches data only through the pet operations.',
      { path: '\\.(resolver|controller)\\.ts$' },
      { path: ['(^|/)node_modules/(typeorm|mysql2)/', '\\.repository\\.ts$', '^src/database/'] },
    ),
    forbid(
      'config-only-in-composition',
      'Only the composition reads the configuration; the rest is given its values.',
      { path: '^src/', pathNot: COMPOSITION },
      { path: '^src/config\\.ts$' },
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // What tests write (clients generated by test/system/generated-clients.test.ts, with their own import circles) is not ours.
    exclude: { path: '^test/output/' },
    // Type-only imports count: a type from a higher layer ties the two as much as a value does.
    tsPreCompilationDeps: true,
    // The TypeScript program that holds src, test and bench.
    tsConfig: { fileName: 'tsconfig.eslint.json' },
  },
};
