import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { reviveTrustedDocumentIds } from '../../src/graphql/subscription.server';
import { TrustedDocuments, resolveTrustedDocument, sha256Hex, withoutPersistedQuery } from '../../src/graphql/trusted-documents';

const PETS = 'query Pets { pets { id name } }';
const PET_CREATED = 'subscription PetCreated { petCreated { id } }';
const PETS_ID = sha256Hex(PETS);
const UNKNOWN = sha256Hex('query Other { pets { id } }');

const apolloManifest = (operations: unknown) => JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 1, operations });
const parse = (text: string) => TrustedDocuments.parse([{ source: 'm.json', text }]);

describe('TrustedDocuments, reading manifests', () => {
  test("when given Apollo's persisted query manifest, then each operation's body is found by its id", () => {
    const trusted = parse(apolloManifest([{ id: PETS_ID, name: 'Pets', type: 'query', body: PETS }]));
    expect(trusted.size).toBe(1);
    expect(trusted.documentOf(PETS_ID)).toBe(PETS);
    expect(trusted.documentOf(UNKNOWN)).toBeUndefined();
  });

  test("when given graphql-codegen's persisted-documents.json, then each document is found by its id", () => {
    const trusted = parse(JSON.stringify({ [PETS_ID]: PETS, [sha256Hex(PET_CREATED)]: PET_CREATED }));
    expect(trusted.size).toBe(2);
    expect(trusted.documentOf(sha256Hex(PET_CREATED))).toBe(PET_CREATED);
  });

  test('when given several manifests, then their documents are merged', () => {
    const trusted = TrustedDocuments.parse([
      { source: 'a.json', text: JSON.stringify({ [PETS_ID]: PETS }) },
      { source: 'b.json', text: apolloManifest([{ id: sha256Hex(PET_CREATED), name: 'PetCreated', type: 'subscription', body: PET_CREATED }]) },
    ]);
    expect(trusted.size).toBe(2);
  });

  test.each([
    ['not JSON', '{"a": ', /^m\.json: not JSON \(.+\)$/],
    ['not an object', '[]', /^m\.json: expected a JSON object/],
    ['a wrong format', JSON.stringify({ format: 'other', version: 1, operations: [] }), /^m\.json: format must be equal to apollo-persisted-query-manifest$/],
    ['a wrong version', JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 2, operations: [] }), /^m\.json: version must be equal to 1$/],
    [
      'operations not a list',
      JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 1, operations: {} }),
      /^m\.json: operations must be an array$/,
    ],
    ['an operation without a body', apolloManifest([{ id: PETS_ID, name: 'Pets', type: 'query' }]), /^m\.json: operations\.0\.body must be a string$/],
    [
      'an operation of another type',
      apolloManifest([{ id: PETS_ID, name: 'Pets', type: 'fragment', body: PETS }]),
      /^m\.json: operations\.0\.type must be one of/,
    ],
    [
      'an id that is not a digest',
      apolloManifest([{ id: 'pets', name: 'Pets', type: 'query', body: PETS }]),
      /^m\.json: operations\.0\.id must be a lower-case SHA-256/,
    ],
    [
      'a wrong hash (Apollo)',
      apolloManifest([{ id: UNKNOWN, name: 'Pets', type: 'query', body: PETS }]),
      new RegExp(`^m\\.json: ${UNKNOWN} is not the SHA-256 of its document`),
    ],
    ['a wrong hash (codegen)', JSON.stringify({ [UNKNOWN]: PETS }), new RegExp(`^m\\.json: ${UNKNOWN} is not the SHA-256 of its document`)],
    ['a key that is not a digest (codegen)', JSON.stringify({ Pets: PETS }), /^m\.json: key "Pets" is not a lower-case SHA-256 hex digest$/],
    ['a document that is not a string (codegen)', JSON.stringify({ [PETS_ID]: 1 }), /^m\.json: the document of [0-9a-f]{64} is not a string$/],
  ])('when a manifest has %s, then it is refused with one line naming it', (_what, text, message) => {
    expect(() => parse(text)).toThrow(message);
    try {
      parse(text);
    } catch (error) {
      expect((error as Error).message).not.toContain('\n');
    }
  });

  test('when a file is missing, then one line names it', () => {
    expect(() => TrustedDocuments.read(['no/such/file.json'])).toThrow(/^no\/such\/file\.json: cannot be read \(ENOENT\)$/);
  });

  test('when files are read, then paths are relative to the working directory', () => {
    const folder = mkdtempSync(path.join(tmpdir(), 'trusted-'));
    writeFileSync(path.join(folder, 'documents.json'), JSON.stringify({ [PETS_ID]: PETS }));
    const cwd = process.cwd();
    try {
      process.chdir(folder);
      expect(TrustedDocuments.read(['documents.json']).documentOf(PETS_ID)).toBe(PETS);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('resolveTrustedDocument, the rule of both surfaces', () => {
  const trusted = parse(JSON.stringify({ [PETS_ID]: PETS }));
  const apq = (sha256Hash: string) => ({ persistedQuery: { version: 1, sha256Hash } });
  const substitute = { action: 'substitute', query: PETS };
  const keep = { action: 'keep' };
  const idRequired = { action: 'refuse', code: 'PERSISTED_QUERY_ID_REQUIRED' };
  const notInList = { action: 'refuse', code: 'PERSISTED_QUERY_NOT_IN_LIST' };

  test.each([
    ['publishable', 'a known documentId', { documentId: `sha256:${PETS_ID}` }, substitute],
    ['publishable', 'a known documentId in upper case', { documentId: `sha256:${PETS_ID.toUpperCase()}` }, substitute],
    ['publishable', 'a known documentId with an empty query (graphql-ws)', { query: '', documentId: `sha256:${PETS_ID}` }, substitute],
    ['publishable', 'an unknown documentId', { documentId: `sha256:${UNKNOWN}` }, notInList],
    ['publishable', 'a documentId without its sha256: prefix', { documentId: PETS_ID }, notInList],
    ['publishable', 'a documentId that is not a string', { documentId: 7 }, notInList],
    ['publishable', 'a known APQ hash without a query', { extensions: apq(PETS_ID) }, substitute],
    ['publishable', 'an unknown APQ hash without a query', { extensions: apq(UNKNOWN) }, notInList],
    ['publishable', 'an inline query', { query: PETS }, idRequired],
    ['publishable', 'an inline query with its APQ hash', { query: PETS, extensions: apq(PETS_ID) }, idRequired],
    ['publishable', 'an inline query with a documentId', { query: PETS, documentId: `sha256:${PETS_ID}` }, idRequired],
    ['publishable', 'nothing', {}, idRequired],
    ['secret', 'a known documentId', { documentId: `sha256:${PETS_ID}` }, substitute],
    ['secret', 'an unknown documentId', { documentId: `sha256:${UNKNOWN}` }, notInList],
    ['secret', 'a known APQ hash without a query', { extensions: apq(PETS_ID) }, substitute],
    ['secret', 'an unknown APQ hash without a query (automatic persisted queries)', { extensions: apq(UNKNOWN) }, keep],
    ['secret', 'an inline query', { query: PETS }, keep],
    ['secret', 'an inline query with its APQ hash (registration)', { query: PETS, extensions: apq(PETS_ID) }, keep],
    ['secret', 'nothing (Apollo refuses it)', {}, keep],
  ] as const)('when a %s key sends %s, then %j', (kind, _what, request, expected) => {
    expect(resolveTrustedDocument(request, kind, trusted)).toEqual(expected);
  });

  test('when no manifest is configured, then a publishable key can run nothing and a secret key runs what it did', () => {
    expect(resolveTrustedDocument({ documentId: `sha256:${PETS_ID}` }, 'publishable', TrustedDocuments.none())).toEqual(notInList);
    expect(resolveTrustedDocument({ query: PETS }, 'secret', TrustedDocuments.none())).toEqual(keep);
  });

  test('when the persistedQuery extension is removed, then the other extensions stay', () => {
    expect(withoutPersistedQuery({ ...apq(PETS_ID), tracing: true })).toEqual({ tracing: true });
    expect(withoutPersistedQuery(apq(PETS_ID))).toBeUndefined();
    expect(withoutPersistedQuery(undefined)).toBeUndefined();
  });
});

describe("reviveTrustedDocumentIds, graphql-ws's JSON reviver", () => {
  const revive = (message: unknown) => JSON.parse(JSON.stringify(message), reviveTrustedDocumentIds);

  test('when a subscribe names a document by id only, then it gets the empty query graphql-ws requires', () => {
    expect(revive({ id: '1', type: 'subscribe', payload: { documentId: 'sha256:x' } })).toEqual({
      id: '1',
      type: 'subscribe',
      payload: { documentId: 'sha256:x', query: '' },
    });
    expect(revive({ id: '1', type: 'subscribe', payload: { extensions: { persistedQuery: {} } } }).payload.query).toBe('');
  });

  test('when a message has a query, or is not a subscribe, then it is left as it is', () => {
    const withQuery = { id: '1', type: 'subscribe', payload: { query: PET_CREATED, documentId: 'sha256:x' } };
    expect(revive(withQuery)).toEqual(withQuery);
    expect(revive({ type: 'connection_init', payload: { documentId: 'x' } })).toEqual({ type: 'connection_init', payload: { documentId: 'x' } });
    expect(revive({ id: '1', type: 'subscribe', payload: {} })).toEqual({ id: '1', type: 'subscribe', payload: {} });
  });
});
