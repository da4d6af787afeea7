/**
 * The three test tiers (CONTRIBUTING.md "Tests"), one jest project each, on one transform:
 * `unit` (the pure rules, in process), `integration` (the real app over HTTP on a real database)
 * and `system` (real services and built processes). `npm test` runs the first two.
 */
const shared = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/test/tsconfig.json' }],
    '^.+/node_modules/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true, module: 'commonjs' }, diagnostics: false }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(content-disposition|cookie|github-slugger)/)'],
};

/** @type {import('jest').Config} */
module.exports = {
  projects: ['unit', 'integration', 'system'].map((tier) => ({ ...shared, displayName: tier, roots: [`<rootDir>/test/${tier}`] })),
  testTimeout: 30_000,
  verbose: true,
};
