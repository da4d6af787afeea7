import path from 'node:path';
import type { CodegenConfig } from '@graphql-codegen/cli';
import { addTypenameToDocument } from '@apollo/client/utilities';

/**
 * graphql-codegen's client preset: typed documents for the `graphql()` calls of this folder, from
 * the committed schema.graphql, and gql/persisted-documents.json, the trusted documents manifest the server reads
 * (TRUSTED_DOCUMENTS, docs/api-keys.md "Trusted documents"). Run from the repository's root:
 * `npx graphql-codegen --config examples/frontend/codegen.ts`.
 */
const config: CodegenConfig = {
  schema: path.join(__dirname, '..', '..', 'schema.graphql'),
  documents: [path.join(__dirname, '*.ts')],
  generates: {
    [path.join(__dirname, 'gql') + path.sep]: {
      preset: 'client',
      // The `__typename`s Apollo Client adds, by its own function, written into the documents: what is registered is
      // then what runs. (The preset's addTypenameSelectionDocumentTransform also adds one to the root of a subscription,
      // which a subscription may not select.)
      documentTransforms: [
        { transform: ({ documents }) => documents.map((source) => ({ ...source, document: source.document && addTypenameToDocument(source.document) })) },
      ],
      presetConfig: {
        // Each document carries its SHA-256 in `__meta__.hash` (apollo.ts sends it), and persisted-documents.json maps
        // each hash to its document.
        persistedDocuments: { hashAlgorithm: 'sha256' },
      },
      config: {
        // SafeInt is a JSON number within ±(2^53-1); an ID is sent as a string.
        scalars: { SafeInt: 'number', ID: 'string' },
      },
    },
  },
};

export default config;
