// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // Generated: by the build, npm, openapi-typescript and graphql-codegen (`npm run examples:codegen`), the tests (test/output/) and the benchmark.
  {
    ignores: [
      'dist/',
      'node_modules/',
      'coverage/',
      'test/generated/',
      'test/output/',
      'bench/results/',
      'examples/frontend/gql/',
      'examples/rest-client/openapi.d.ts',
    ],
  },
  eslint.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    // One program over src, test, bench, examples and ormconfig.ts: tsconfig.json builds only src, and test has no tsconfig of its own.
    languageOptions: { parserOptions: { project: './tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Off: Fastify hooks and plugins and Apollo plugin hooks are async by contract; an async function without await is their interface.
      '@typescript-eslint/require-await': 'off',
      // A leading `_` marks a name left unused on purpose (as tsc's noUnusedParameters allows), e.g. to drop a property with a rest pattern.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // The pet operations and what they reach know no HTTP exchange: the surfaces read headers and hand over values (docs/architecture.md).
    files: [
      'src/{pets,idempotency,database,validation}/**/*.ts',
      'src/{limits,errors/error-catalogue,observability/deprecation.tracker,observability/metrics.registry}.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[property.name='headers'][object.type!='ThisExpression']",
          message: 'The pet operations read no header: the surface passes the value on.',
        },
        { selector: 'Identifier[name=/^(request|reply)$/]', message: 'The pet operations know no HTTP request or reply.' },
      ],
    },
  },
  {
    // A surface passes input on as received: the pet operations validate it (docs/architecture.md).
    files: ['src/rest/pet.controller.ts', 'src/graphql/pet.resolver.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'TSAsExpression > TSTypeReference > Identifier[name=/^(NewPetInput|ListPetsArgs|PetIdArgs)$/]',
          message: 'Pass the input on as received: the pet operations validate it.',
        },
      ],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // Off in tests only: parsed HTTP bodies and browser globals are `any` there, and the assertions check their shape.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // The playground's bootstrap runs in the browser as a classic script, beside the globals of the UMD bundles it follows.
    files: ['src/graphql/playground/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: {
      sourceType: 'script',
      globals: Object.fromEntries(
        ['document', 'location', 'sessionStorage', 'fetch', 'React', 'ReactDOM', 'GraphiQL', 'graphqlWs'].map((name) => [name, 'readonly']),
      ),
    },
  },
  // The config files are plain JavaScript outside the TypeScript program.
  { files: ['**/*.mjs', '**/*.cjs'], extends: [tseslint.configs.disableTypeChecked] },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs' } },
);
