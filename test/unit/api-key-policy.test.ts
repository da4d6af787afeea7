import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import { type GraphQLSchema, isObjectType } from 'graphql';
import {
  KEY_KINDS,
  OPERATION_SCOPES,
  SECRET_KEY_SCANNER,
  formatKey,
  kindOfKeyText,
  parseDuration,
  parseOrigin,
  SCOPES,
  scopesFor,
} from '../../src/auth/api-key-policy';
import { generateApiKey } from '../../src/auth/api-key-policy';
import { buildPetStoreSchema } from '../../src/graphql/schema';

/**
 * The API key policy (docs/api-keys.md) in process: the key format and its checksum, the secret scanner, the scopes a
 * key may hold, the CLI's durations and origins, and the scope table against what the app really serves.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const secret = () => randomBytes(32).toString('base64url');

/** A key in the format used before kinds existed: `pst_`, the secret, CRC-32 of the secret alone. */
function legacyKey(text = secret()): string {
  return `pst_${text}${Buffer.from(crc32(text).toString(16).padStart(8, '0'), 'hex').toString('base64url')}`;
}

/** `key` with the character at `index` replaced by another base64url character. */
function withTypo(key: string, index: number): string {
  const replacement = key[index] === 'A' ? 'B' : 'A';
  return key.slice(0, index) + replacement + key.slice(index + 1);
}

describe('the key format', () => {
  test('when keys of each kind are made, then their text is prefix, 43 characters of secret and 6 of checksum, and reads back as that kind', () => {
    const secretKey = generateApiKey('secret');
    const publishableKey = generateApiKey('publishable');
    expect(secretKey).toMatch(/^pst_sk_[A-Za-z0-9_-]{49}$/);
    expect(publishableKey).toMatch(/^pst_pk_[A-Za-z0-9_-]{49}$/);
    expect(kindOfKeyText(secretKey)).toBe('secret');
    expect(kindOfKeyText(publishableKey)).toBe('publishable');
    expect(kindOfKeyText(formatKey('publishable', 'A'.repeat(43)))).toBe('publishable');
  });

  test('when a key made before kinds existed is read, then it is a secret key', () => {
    const key = legacyKey();
    expect(key).toMatch(/^pst_[A-Za-z0-9_-]{49}$/);
    expect(kindOfKeyText(key)).toBe('secret');
  });

  test('when the kind letter of a key is flipped (sk ↔ pk), then the checksum fails and the key is malformed', () => {
    const secretKey = generateApiKey('secret');
    const publishableKey = generateApiKey('publishable');
    expect(kindOfKeyText(secretKey.replace(/^pst_sk_/, 'pst_pk_'))).toBeNull();
    expect(kindOfKeyText(publishableKey.replace(/^pst_pk_/, 'pst_sk_'))).toBeNull();
  });

  test.each([
    ['a truncated secret key', (key: string) => key.slice(0, -1)],
    ['a key with one character more', (key: string) => `${key}A`],
    ['a typo in the secret', (key: string) => withTypo(key, 10)],
    ['a typo in the checksum', (key: string) => withTypo(key, key.length - 1)],
    ['another prefix', (key: string) => key.replace(/^pst_sk_/, 'pst_xk_')],
    ['the secret alone', (key: string) => key.slice('pst_sk_'.length)],
    ['a character outside base64url', (key: string) => `${key.slice(0, 20)}+${key.slice(21)}`],
    ['surrounding whitespace', (key: string) => ` ${key}`],
  ])('when %s is read, then it is malformed', (_case, spoil) => {
    expect(kindOfKeyText(spoil(generateApiKey('secret')))).toBeNull();
  });

  test('when a legacy key is truncated or mistyped, then it is malformed', () => {
    const key = legacyKey();
    expect(kindOfKeyText(key.slice(0, -1))).toBeNull();
    expect(kindOfKeyText(withTypo(key, 8))).toBeNull();
    // The legacy checksum does not cover a kind letter: a legacy key with a kind prefix added is not a key either.
    expect(kindOfKeyText(`pst_sk_${key.slice('pst_'.length)}`)).toBeNull();
  });
});

describe('SECRET_KEY_SCANNER', () => {
  const found = (text: string) => text.match(SECRET_KEY_SCANNER)?.[0];

  test('when text holds a secret key or a legacy key, then the scanner finds exactly that key', () => {
    for (let i = 0; i < 50; i++) {
      const secretKey = generateApiKey('secret');
      const old = legacyKey();
      expect(found(`export API_KEY=${secretKey}\n`)).toBe(secretKey);
      expect(found(`{"key":"${old}"}`)).toBe(old);
      expect(found(`Authorization: Bearer ${secretKey}`)).toBe(secretKey);
      expect(found(old)).toBe(old);
    }
  });

  test('when text holds publishable keys, then the scanner never matches', () => {
    for (let i = 0; i < 200; i++) {
      const key = generateApiKey('publishable');
      expect(found(key)).toBeUndefined();
      expect(found(`const key = "${key}";`)).toBeUndefined();
    }
  });

  test('when a longer token merely contains a key-like run, then the scanner does not match', () => {
    const key = generateApiKey('secret');
    expect(found(`x${key}`)).toBeUndefined();
    expect(found(`${key}A`)).toBeUndefined();
  });

  test('when docs/api-keys.md gives the scanner pattern, then it is the one the code exports', () => {
    const docs = readFileSync(path.join(ROOT, 'docs', 'api-keys.md'), 'utf8');
    expect(docs).toContain(`\`\`\`text\n${SECRET_KEY_SCANNER.source}\n\`\`\``);
  });
});

describe('scopesFor', () => {
  test('when no scopes are asked for, then each kind gets its defaults', () => {
    expect(scopesFor('secret')).toEqual(['pets:read', 'pets:write']);
    expect(scopesFor('secret', [])).toEqual(['pets:read', 'pets:write']);
    expect(scopesFor('publishable')).toEqual(['pets:read']);
    expect(KEY_KINDS.publishable.defaultScopes).toEqual(['pets:read']);
  });

  test('when grantable scopes are asked for, then they are granted once each, in the table order', () => {
    expect(scopesFor('secret', ['pets:write', 'pets:read', 'pets:write'])).toEqual(['pets:read', 'pets:write']);
    expect(scopesFor('secret', ['pets:read'])).toEqual(['pets:read']);
    expect(scopesFor('secret', ['pets:write'])).toEqual(['pets:write']);
    expect(scopesFor('publishable', ['pets:read'])).toEqual(['pets:read']);
  });

  test('when a publishable key asks for pets:write, then it is refused with a reason', () => {
    expect(() => scopesFor('publishable', ['pets:write'])).toThrow(new RangeError('a publishable key cannot hold pets:write: it may hold pets:read'));
    expect(() => scopesFor('publishable', ['pets:read', 'pets:write'])).toThrow(RangeError);
  });

  test('when a scope that does not exist is asked for, then it is refused, naming it and the scopes there are', () => {
    expect(() => scopesFor('secret', ['pets:delete'])).toThrow(
      new RangeError('unknown scope "pets:delete": the scopes are pets:read, pets:write, keys:admin, webhooks:admin'),
    );
    expect(() => scopesFor('secret', ['PETS:READ'])).toThrow(/unknown scope/);
    expect(() => scopesFor('secret', [''])).toThrow(/unknown scope/);
  });
});

describe('parseDuration', () => {
  test.each([
    ['30s', 30_000],
    ['15m', 15 * 60_000],
    ['2h', 2 * 3_600_000],
    ['1d', 86_400_000],
    ['90d', 90 * 86_400_000],
    ['999999s', 999_999_000],
  ])('when %p is read, then it is %p ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  test.each(['0', '0s', '00d', '1.5h', '10', '10w', '-1d', '', ' 1d', '1d ', '1 d', 'd', '1D', '1e3s', '1000000s', '+1d', '1dd'])(
    'when %p is read, then it is refused with a one-line reason',
    (text) => {
      expect(() => parseDuration(text)).toThrow(new RangeError(`"${text}" is not a duration: expected a whole number with s, m, h or d, e.g. 90d`));
    },
  );
});

describe('parseOrigin', () => {
  test.each([
    ['https://A.example.com:443', 'https://a.example.com'],
    ['https://shop.example.com', 'https://shop.example.com'],
    ['HTTPS://Shop.Example.COM', 'https://shop.example.com'],
    ['http://localhost:3000', 'http://localhost:3000'],
    ['http://a.example.com:80', 'http://a.example.com'],
    ['https://a.example.com:8443', 'https://a.example.com:8443'],
    ['http://127.0.0.1:5173', 'http://127.0.0.1:5173'],
    ['https://bücher.example', 'https://xn--bcher-kva.example'],
  ])('when %p is read, then it is the origin browsers send, %p', (text, origin) => {
    expect(parseOrigin(text)).toBe(origin);
  });

  test.each([
    'https://a.example.com/',
    'https://a.example.com/shop',
    'https://a.example.com?x=1',
    'https://a.example.com?',
    'https://a.example.com#top',
    'https://a.example.com#',
    'https://user:secret@a.example.com',
    'https://user@a.example.com',
    'ftp://a.example.com',
    'ws://a.example.com',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'a.example.com',
    '*',
    'null',
    '',
  ])('when %p is read, then it is refused as not an origin', (text) => {
    expect(() => parseOrigin(text)).toThrow(RangeError);
    expect(() => parseOrigin(text)).toThrow(/is not an origin/);
  });
});

describe('the scope table', () => {
  let schema: GraphQLSchema;
  beforeAll(async () => {
    schema = await buildPetStoreSchema();
  });

  /** The committed OpenAPI document: contract.test.ts keeps it equal to what the app registers. */
  const openapi = JSON.parse(readFileSync(path.join(ROOT, 'contract', 'openapi.json'), 'utf8')) as {
    paths: Record<string, Record<string, { operationId?: string; tags?: string[]; security?: Array<Record<string, string[]>> }>>;
  };
  const operations = Object.values(openapi.paths).flatMap((methods) => Object.values(methods));

  test('when the REST operations are listed, then each has a scope in the table or is public, and the table names no other', () => {
    const operationIds = operations.map((operation) => operation.operationId);
    expect(operationIds).not.toContain(undefined);
    expect([...operationIds].sort()).toEqual([...Object.keys(OPERATION_SCOPES.rest), ...OPERATION_SCOPES.public].sort());
    expect(Object.keys(OPERATION_SCOPES.rest).filter((id) => (OPERATION_SCOPES.public as readonly string[]).includes(id))).toEqual([]);
  });

  test('when the OpenAPI document states an operation’s security, then it is the bearer scheme with the scope of the table, or none for a public one', () => {
    for (const operation of operations) {
      const isPublic = (OPERATION_SCOPES.public as readonly string[]).includes(operation.operationId!);
      const scope = OPERATION_SCOPES.rest[operation.operationId as keyof typeof OPERATION_SCOPES.rest];
      const expected = isPublic ? [] : [{ bearerAuth: [scope] }];
      expect({ [operation.operationId!]: operation.security }).toEqual({ [operation.operationId!]: expected });
    }
  });

  test('when the GraphQL root types are listed, then every root field has a scope in the table and the table names no other', () => {
    const roots = { Query: schema.getQueryType(), Mutation: schema.getMutationType(), Subscription: schema.getSubscriptionType() };
    expect(Object.keys(OPERATION_SCOPES.graphql).sort()).toEqual(Object.keys(roots).sort());
    for (const [name, type] of Object.entries(roots)) {
      expect(type && isObjectType(type) && type.name).toBe(name);
      const fields = Object.keys(type!.getFields()).sort();
      expect({ [name]: fields }).toEqual({ [name]: Object.keys(OPERATION_SCOPES.graphql[name as keyof typeof roots]).sort() });
    }
  });

  test('when the table gives scopes, then each is one that exists, writes need pets:write, and only the administration API needs an admin scope', () => {
    const graphqlScopes = Object.values(OPERATION_SCOPES.graphql).flatMap((fields) => Object.values(fields));
    for (const scope of graphqlScopes) expect(['pets:read', 'pets:write']).toContain(scope);
    const admin = operations.filter((operation) => operation.tags?.includes('admin')).map((operation) => operation.operationId!);
    expect(admin.length).toBeGreaterThan(0);
    for (const [operationId, scope] of Object.entries(OPERATION_SCOPES.rest)) {
      expect({ [operationId]: scope.endsWith(':admin') }).toEqual({ [operationId]: admin.includes(operationId) });
      expect(SCOPES).toContain(scope);
    }
    expect(OPERATION_SCOPES.rest.createPet).toBe('pets:write');
    expect(OPERATION_SCOPES.graphql.Mutation.createPet).toBe('pets:write');
  });

  test('when the administration of keys is looked up, then each of its operations needs keys:admin', () => {
    const keyOperations = ['createApiKey', 'listApiKeys', 'getApiKey', 'rollApiKey', 'revokeApiKey'] as const;
    expect(Object.fromEntries(keyOperations.map((id) => [id, OPERATION_SCOPES.rest[id]]))).toEqual(
      Object.fromEntries(keyOperations.map((id) => [id, 'keys:admin'])),
    );
  });
});
