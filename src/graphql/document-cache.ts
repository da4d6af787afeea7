import { type DocumentNode, Kind, type OperationDefinitionNode, type SelectionSetNode, visit } from 'graphql';
import { LRUCache } from 'lru-cache';

/**
 * What V8 keeps per piece of a cached entry (Node 20, 64-bit), each a little above the heap
 * growth measured for it (test/graphql-document-caches.test.ts checks them against the heap).
 */
const RETAINED_BYTES = Object.freeze({
  /** A lexer token: graphql-js links every token from the document, comments included (88 measured). */
  token: 96,
  /** An AST node with its location (210 measured). */
  node: 224,
  /** A document's Source object, arrays and string headers (0.5 to 1.3 KB measured). */
  document: 2048,
  /** A cache entry's bookkeeping and a small value such as a price. */
  entry: 256,
  /** A compiled operation's fixed part (about 2 KB measured). */
  compiledOperation: 2048,
  /** Generated code per selected field without a selection set, fragments expanded (150 measured). */
  compiledLeafField: 256,
  /** Generated code per selected field with a selection set, fragments expanded (up to 17.4 KB measured, introspection's). */
  compiledObjectField: 20 * 1024,
});

/**
 * Counting stops at this many selections (fragments expanded), which bounds the work; the cost
 * limit refuses such an operation before it runs anyway (graphql-query-complexity gives up there).
 */
const MAX_COUNTED_SELECTIONS = 10_000;

/**
 * The bytes V8 keeps for a string: one per character unless one is above U+00FF, then two.
 *
 * @returns bytes; O(length), paid when an entry is stored, not on a hit. Throws nothing.
 */
export function textBytes(text: string): number {
  return /[\u0100-\uffff]/.test(text) ? 2 * text.length : text.length;
}

/**
 * The bytes a parsed document keeps alive: its source text (every AST location points to it),
 * every lexer token (comments included), every AST node with its location.
 *
 * @param document - as graphql-js's `parse` returns it, with locations (Apollo's and the subscription server's).
 * @returns an estimate in bytes, at or above the heap growth measured. Throws nothing.
 */
export function documentBytes(document: DocumentNode): number {
  let tokens = 0;
  for (let token = document.loc?.startToken ?? null; token !== null; token = token.next) tokens++;
  let nodes = 0;
  visit(document, {
    enter() {
      nodes++;
    },
  });
  return textBytes(document.loc?.source.body ?? '') + tokens * RETAINED_BYTES.token + nodes * RETAINED_BYTES.node + RETAINED_BYTES.document;
}

/**
 * The bytes graphql-jit's compiled form of `operation` keeps alive: its document (see
 * {@link documentBytes}) and the generated code, which grows with the fields selected once
 * fragments are expanded, most for fields with a selection set.
 *
 * @param document - the validated document (no fragment cycles) holding `operation`.
 * @returns an estimate in bytes, at or above the heap growth measured. Throws nothing.
 */
export function compiledOperationBytes(document: DocumentNode, operation: OperationDefinitionNode): number {
  const fragments = new Map<string, SelectionSetNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition.selectionSet);
  }
  let leaves = 0;
  let objects = 0;
  const count = (selectionSet: SelectionSetNode | undefined): void => {
    for (const selection of selectionSet?.selections ?? []) {
      if (leaves + objects >= MAX_COUNTED_SELECTIONS) return;
      if (selection.kind === Kind.FRAGMENT_SPREAD) count(fragments.get(selection.name.value));
      else if (selection.kind === Kind.INLINE_FRAGMENT) count(selection.selectionSet);
      else if (selection.selectionSet === undefined) leaves++;
      else {
        objects++;
        count(selection.selectionSet);
      }
    }
  };
  count(operation.selectionSet);
  return documentBytes(document) + RETAINED_BYTES.compiledOperation + leaves * RETAINED_BYTES.compiledLeafField + objects * RETAINED_BYTES.compiledObjectField;
}

/**
 * An LRU bounded in bytes (docs/security.md "Limits"): each entry weighs its key, its bookkeeping and
 * `bytesOf(value)`; the least recently used go first, and an entry heavier than the whole
 * budget is not kept.
 *
 * @param maxBytes - the budget in bytes, one of {@link DOCUMENT_CACHE_LIMITS}.
 * @param bytesOf - the bytes a value keeps alive; it must not throw.
 * @returns an lru-cache LRUCache keyed by string.
 */
export function byteBoundedLru<V extends object | string>(maxBytes: number, bytesOf: (value: V) => number): LRUCache<string, V> {
  return new LRUCache<string, V>({
    maxSize: maxBytes,
    sizeCalculation: (value, key) => textBytes(key) + RETAINED_BYTES.entry + Math.ceil(bytesOf(value)),
  });
}

/**
 * Apollo Server's cache interface (`KeyValueCache`, for its `documentStore` and `cache`
 * options) over {@link byteBoundedLru} (docs/security.md "Limits"), instead of Apollo's default, which
 * allows 30 MiB per cache and weighs a document by its JSON, leaving out the source text it
 * keeps (a 50 KiB comment weighed about 300 bytes).
 *
 * @param maxBytes - the budget in bytes, one of {@link DOCUMENT_CACHE_LIMITS}.
 * @param bytesOf - the bytes a value keeps alive: {@link documentBytes} for documents, {@link textBytes} for query texts.
 * @returns get/set/delete as Apollo calls them; `set`'s `ttl` is in seconds, as Apollo gives it. None rejects.
 */
export function apolloCache<V extends object | string>(maxBytes: number, bytesOf: (value: V) => number) {
  const entries = byteBoundedLru<V>(maxBytes, bytesOf);
  return {
    get: async (key: string): Promise<V | undefined> => entries.get(key),
    set: async (key: string, value: V, options?: { ttl?: number | null }): Promise<void> => {
      entries.set(key, value, options?.ttl ? { ttl: options.ttl * 1000 } : undefined);
    },
    delete: async (key: string): Promise<boolean> => entries.delete(key),
  };
}
