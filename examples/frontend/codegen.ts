import path from 'node:path';
import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * graphql-codegen's client preset: typed documents for the `graphql()` calls of this folder, from
 * the committed schema.graphql. Run from the repository's root: `npx graphql-codegen --config examples/frontend/codegen.ts`.
 */
const config: CodegenConfig = {
  schema: path.join(__dirname, '..', '..', 'schema.graphql'),
  documents: [path.join(__dirname, '*.ts')],
  generates: {
    [path.join(__dirname, 'gql') + path.sep]: {
      preset: 'client',
      config: {
        // SafeInt is a JSON number within ±(2^53-1); an ID is sent as a string.
        scalars: { SafeInt: 'number', ID: 'string' },
      },
    },
  },
};

export default config;
