// class-transformer's @Type reads decorator metadata; loadConfig may run before main.ts's import of it (tests, CLIs).
import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Type, plainToInstance } from 'class-transformer';
import { Equals, IsArray, IsIn, IsString, Matches, ValidateNested, validateSync } from 'class-validator';
import type { KeyKind } from '../auth/api-key-policy';
import type { ErrorCode } from '../errors/error-catalogue';
import { describeViolations } from '../validation/validate-input';

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** One operation of Apollo's persisted query manifest (`generate-persisted-query-manifest`). */
class ApolloManifestOperation {
  @Matches(SHA256_HEX, { message: '$property must be a lower-case SHA-256 hex digest' })
  id!: string;

  @IsString()
  name!: string;

  @IsIn(['query', 'mutation', 'subscription'])
  type!: string;

  @IsString()
  body!: string;
}

/** Apollo's persisted query manifest: `{"format":"apollo-persisted-query-manifest","version":1,"operations":[…]}`. */
class ApolloManifest {
  @Equals('apollo-persisted-query-manifest')
  format!: string;

  @Equals(1)
  version!: number;

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ApolloManifestOperation)
  operations!: ApolloManifestOperation[];
}

/** The id → document pairs of one parsed manifest file, in either format. @throws Error with a one-line reason. */
function entriesOf(manifest: unknown): [string, string][] {
  if (typeof manifest !== 'object' || manifest === null || Array.isArray(manifest)) {
    throw new Error('expected a JSON object (an Apollo persisted query manifest or a graphql-codegen persisted-documents.json)');
  }
  if ('format' in manifest) {
    const apollo = plainToInstance(ApolloManifest, manifest);
    const [violation] = describeViolations(validateSync(apollo, { forbidUnknownValues: true }));
    if (violation !== undefined) throw new Error(violation);
    return apollo.operations.map(({ id, body }) => [id, body]);
  }
  // graphql-codegen's client preset: {"<sha256 hex>": "<document>"}; a record class-validator cannot describe.
  return Object.entries(manifest).map(([id, body]) => {
    if (!SHA256_HEX.test(id)) throw new Error(`key ${JSON.stringify(id.slice(0, 80))} is not a lower-case SHA-256 hex digest`);
    if (typeof body !== 'string') throw new Error(`the document of ${id} is not a string`);
    return [id, body];
  });
}

/**
 * The trusted documents (docs/api-keys.md "Trusted documents"): the GraphQL documents registered at build time, by the
 * SHA-256 hex digest of their text, read from Apollo persisted query manifests and graphql-codegen `persisted-documents.json`
 * files. Immutable once read.
 */
export class TrustedDocuments {
  private constructor(private readonly byHash: ReadonlyMap<string, string>) {}

  /** None: a publishable key can run nothing. */
  static none(): TrustedDocuments {
    return new TrustedDocuments(new Map());
  }

  /**
   * Parses manifests given as text, checking each id is the SHA-256 hex digest of its document.
   * @param manifests - each with a `source` (its file name) for the error message.
   * @throws Error with one line naming the source and the problem (bad JSON, wrong shape, wrong hash).
   */
  static parse(manifests: readonly { source: string; text: string }[]): TrustedDocuments {
    const byHash = new Map<string, string>();
    for (const { source, text } of manifests) {
      try {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch (error) {
          throw new Error(`not JSON (${(error as Error).message})`, { cause: error });
        }
        for (const [id, body] of entriesOf(parsed)) {
          if (sha256Hex(body) !== id) throw new Error(`${id} is not the SHA-256 of its document: regenerate the manifest`);
          byHash.set(id, body);
        }
      } catch (error) {
        throw new Error(`${source}: ${(error as Error).message.replace(/\s*\n\s*/g, ' ')}`, { cause: error });
      }
    }
    return new TrustedDocuments(byHash);
  }

  /**
   * Reads and parses manifest files (docs/configuration.md `TRUSTED_DOCUMENTS`).
   * @param paths - relative to the working directory, or absolute.
   * @throws Error with one line naming the file and the problem (missing, unreadable, malformed, wrong hash).
   */
  static read(paths: readonly string[]): TrustedDocuments {
    return TrustedDocuments.parse(
      paths.map((file) => {
        try {
          return { source: file, text: readFileSync(file, 'utf8') };
        } catch (error) {
          const { code, message } = error as NodeJS.ErrnoException;
          throw new Error(`${file}: cannot be read (${code ?? message})`, { cause: error });
        }
      }),
    );
  }

  /** How many documents are trusted. */
  get size(): number {
    return this.byHash.size;
  }

  /** The document whose SHA-256 hex digest is `hash`; undefined when no manifest holds it. */
  documentOf(hash: string): string | undefined {
    return this.byHash.get(hash);
  }
}

/** The lower-case hex SHA-256 of `text` in UTF-8, as the manifests and APQ compute ids. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** The fields of a GraphQL request (an HTTP body or query string, a WebSocket `subscribe` payload) that name its document. */
export interface DocumentReference {
  query?: unknown;
  /** GraphQL over HTTP persisted documents: `sha256:<hex>`. */
  documentId?: unknown;
  /** Apollo's `persistedQuery: {version, sha256Hash}` in here. */
  extensions?: unknown;
}

/** What to do with a request before it runs (docs/api-keys.md "Trusted documents"). */
export type TrustedDocumentResolution =
  /** Run the request as it is: a secret key's free-form document or automatic persisted query. */
  | { action: 'keep' }
  /** Run `query`, a trusted document, and drop the id (`documentId`, `extensions.persistedQuery`) so nothing else reads it. */
  | { action: 'substitute'; query: string }
  /** Refuse with this 400 code: nothing runs. */
  | { action: 'refuse'; code: Extract<ErrorCode, 'PERSISTED_QUERY_ID_REQUIRED' | 'PERSISTED_QUERY_NOT_IN_LIST'> };

const DOCUMENT_ID = /^sha256:([0-9a-fA-F]{64})$/;

/** Apollo's `extensions.persistedQuery.sha256Hash`, when it is a string. */
function persistedQueryHash(extensions: unknown): string | undefined {
  const persisted = (extensions as { persistedQuery?: { sha256Hash?: unknown } } | null | undefined)?.persistedQuery;
  const hash = typeof persisted === 'object' && persisted !== null ? persisted.sha256Hash : undefined;
  return typeof hash === 'string' ? hash : undefined;
}

/**
 * The rule of trusted documents, the same for HTTP and the WebSocket (docs/api-keys.md "Trusted documents"):
 * - a `documentId` (any key) is looked up: found, its document runs; else PERSISTED_QUERY_NOT_IN_LIST;
 * - a publishable key sending a document (a non-empty `query`) gets PERSISTED_QUERY_ID_REQUIRED, with or without an id;
 * - `extensions.persistedQuery.sha256Hash` without a document is looked up: found, its document runs (any key); not
 *   found, a publishable key gets PERSISTED_QUERY_NOT_IN_LIST and a secret key keeps automatic persisted queries;
 * - a publishable key naming no document at all gets PERSISTED_QUERY_ID_REQUIRED; a secret key's request is kept.
 * An empty `query` counts as none (graphql-ws requires the field).
 */
export function resolveTrustedDocument(request: DocumentReference, kind: KeyKind, trusted: TrustedDocuments): TrustedDocumentResolution {
  const inline = request.query !== undefined && request.query !== null && request.query !== '';
  if (kind === 'publishable' && inline) return { action: 'refuse', code: 'PERSISTED_QUERY_ID_REQUIRED' };
  const lookUp = (hash: string) => trusted.documentOf(hash.toLowerCase());
  if (request.documentId !== undefined && request.documentId !== null) {
    const hash = typeof request.documentId === 'string' ? DOCUMENT_ID.exec(request.documentId)?.[1] : undefined;
    const query = hash === undefined ? undefined : lookUp(hash);
    return query === undefined ? { action: 'refuse', code: 'PERSISTED_QUERY_NOT_IN_LIST' } : { action: 'substitute', query };
  }
  const hash = persistedQueryHash(request.extensions);
  if (hash !== undefined && !inline) {
    const query = lookUp(hash);
    if (query !== undefined) return { action: 'substitute', query };
    return kind === 'publishable' ? { action: 'refuse', code: 'PERSISTED_QUERY_NOT_IN_LIST' } : { action: 'keep' };
  }
  return kind === 'publishable' ? { action: 'refuse', code: 'PERSISTED_QUERY_ID_REQUIRED' } : { action: 'keep' };
}

/** `extensions` without `persistedQuery`; undefined when nothing else is left. */
export function withoutPersistedQuery(extensions: unknown): Record<string, unknown> | undefined {
  if (typeof extensions !== 'object' || extensions === null) return undefined;
  const { persistedQuery: _dropped, ...rest } = extensions as Record<string, unknown>;
  return Object.keys(rest).length > 0 ? rest : undefined;
}
