import { type DocumentNode, Kind, type OperationDefinitionNode, type SelectionSetNode, visit } from 'graphql';
import { LRUCache } from 'lru-cache';
import { QUERY_LIMITS } from '../limits';

/** What V8 keeps per piece of an entry (Node 20, 64-bit), kept above the heap growth by test/system/graphql-document-caches.test.ts. */
const RETAINED_BYTES = Object.freeze({
  /** graphql-js links every lexer token from the document, comments included. */
  token: 96,
  node: 224,
  document: 2048,
  entry: 256,
  compiledOperation: 2048,
  compiledLeafField: 256,
  /** Sized for introspection's fields, the heaviest. */
  compiledObjectField: 20 * 1024,
});

/** The bytes V8 keeps for a string: one per character unless one is above U+00FF, then two. */
export function textBytes(text: string): number {
  return /[\u0100-\uffff]/.test(text) ? 2 * text.length : text.length;
}

/** The bytes a parsed document (with locations) keeps alive, source text and tokens included; an upper estimate. */
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

/** The bytes graphql-jit's compiled `operation` keeps alive, its document included; `document` must be validated (no fragment cycles). */
export function compiledOperationBytes(document: DocumentNode, operation: OperationDefinitionNode): number {
  const fragments = new Map<string, SelectionSetNode>();
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition.selectionSet);
  }
  let leaves = 0;
  let objects = 0;
  const count = (selectionSet: SelectionSetNode | undefined): void => {
    for (const selection of selectionSet?.selections ?? []) {
      // Bounds the counting work: past it, the cost limit refuses the operation anyway.
      if (leaves + objects >= QUERY_LIMITS.maxPricedSelections) return;
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

/** An LRU bounded in bytes (docs/security.md "Limits"); `bytesOf` must not throw. */
export function byteBoundedLru<V extends object | string>(maxBytes: number, bytesOf: (value: V) => number): LRUCache<string, V> {
  return new LRUCache<string, V>({
    maxSize: maxBytes,
    sizeCalculation: (value, key) => textBytes(key) + RETAINED_BYTES.entry + Math.ceil(bytesOf(value)),
  });
}

/**
 * Apollo's `KeyValueCache` over {@link byteBoundedLru}: Apollo's default weighs a document by its
 * JSON, leaving out the source text it keeps. `ttl` is in seconds, as Apollo gives it.
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
