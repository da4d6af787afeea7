import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

const SRC = path.resolve(__dirname, '..', 'src');
const BENCH = path.resolve(__dirname, '..', 'bench');
const TEST = path.resolve(__dirname);

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(path.join(dir, entry.name)) : entry.name.endsWith('.ts') ? [path.join(dir, entry.name)] : [],
  );
}

/** The code of a file without its comments, so a docstring that names a header is not a read of one. */
function codeOf(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '');
}

/** The code of a file without comments and string literals: what it does, not what it says. */
function statementsOf(file: string): string {
  return codeOf(file).replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\]|\\.)*`/g, "''");
}

function importsOf(file: string): string[] {
  return [...codeOf(file).matchAll(/^(?:import|export)[^'"]*from\s*['"]([^'"]+)['"]|^import\s*['"]([^'"]+)['"]/gm)].map((match) => match[1] ?? match[2]);
}

/** Every source file `file` reaches through relative imports, itself included. */
function closureOf(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  for (const module of importsOf(file).filter((m) => m.startsWith('.'))) closureOf(`${path.resolve(path.dirname(file), module)}.ts`, seen);
  return seen;
}

const relative = (file: string) => path.relative(SRC, file);
const TRANSPORT = /^(fastify|@fastify\/|@apollo\/|@as-integrations\/|graphql$|ioredis)/;

describe('the seam between the surfaces and the pet operations', () => {
  const operations = path.join(SRC, 'pets', 'pet.service.ts');
  const below = [...closureOf(operations)];

  test('when the pet operations are read with everything they import, then no file imports Fastify, Apollo or GraphQL execution', () => {
    expect(below.length).toBeGreaterThan(5);
    const forbidden = below.flatMap((file) =>
      importsOf(file)
        .filter((m) => TRANSPORT.test(m))
        .map((m) => `${relative(file)} → ${m}`),
    );
    expect(forbidden).toEqual([]);
  });

  test('when the pet operations are read, then they use no type-graphql (resolvers and their context are the GraphQL adapter)', () => {
    expect(importsOf(operations)).not.toContain('type-graphql');
  });

  test('when the pet operations are read with everything they import, then nothing reads a header or an HTTP request', () => {
    const readers = below.filter((file) => /\brequest\b|\breply\b|\.headers\s*\[|\.headers\.\w/.test(statementsOf(file))).map(relative);
    expect(readers).toEqual([]);
  });

  test('when a surface hands input to the pet operations, then it passes it on as received, without casting it to a validated type', () => {
    for (const file of ['rest/pet.controller.ts', 'graphql/pet.resolver.ts']) {
      expect({ file, casts: codeOf(path.join(SRC, file)).match(/as (unknown as )?(NewPetInput|ListPetsArgs|PetIdArgs)\b/g) }).toEqual({ file, casts: null });
    }
  });
});

describe('boundaries', () => {
  const files = sourceFiles();

  test('when a service or repository is read, then it imports neither HTTP nor GraphQL code', () => {
    const services = files.filter((file) => /\.(service|repository)\.ts$/.test(file));
    expect(services.length).toBeGreaterThan(2);
    for (const file of services) {
      expect({ file: relative(file), forbidden: importsOf(file).filter((m) => TRANSPORT.test(m)) }).toEqual({ file: relative(file), forbidden: [] });
    }
  });

  test('when a resolver or controller is read, then it reaches data only through the pet operations', () => {
    const adapters = files.filter((f) => /\.(resolver|controller)\.ts$/.test(f));
    // pet.resolver.ts, pet-subscription.resolver.ts, pet.controller.ts
    expect(adapters.length).toBe(3);
    for (const file of adapters) {
      expect({ file: relative(file), forbidden: importsOf(file).filter((m) => /^(typeorm|mysql2)|\.repository$|database\//.test(m)) }).toEqual({
        file: relative(file),
        forbidden: [],
      });
    }
  });

  test('when imports of config.ts are read, then only the composition roots (app.ts, main.ts, cli/) have them', () => {
    const config = path.join(SRC, 'config');
    const importers = files.filter((file) => importsOf(file).some((m) => m.startsWith('.') && path.resolve(path.dirname(file), m) === config));
    expect(importers.map(relative).filter((file) => !/^(app|main)\.ts$|^cli\//.test(file))).toEqual([]);
    expect(importers.length).toBeGreaterThan(2);
  });

  test('when src/ and bench/ are read, then no file imports anything under test/', () => {
    const checked = [...files, ...sourceFiles(BENCH)];
    expect(checked.length).toBeGreaterThan(files.length);
    const intoTest = checked.flatMap((file) =>
      importsOf(file)
        .filter((m) => m.startsWith('.') && !path.relative(TEST, path.resolve(path.dirname(file), m)).startsWith('..'))
        .map((m) => `${path.relative(path.dirname(SRC), file)} → ${m}`),
    );
    expect(intoTest).toEqual([]);
  });

  test('when file names are read, then they are kebab-case, with a dotted role suffix where they have a role', () => {
    for (const file of files) expect(path.basename(file)).toMatch(/^[0-9a-z]+(-[0-9a-z]+)*(\.[a-z]+(-[a-z]+)*)?\.ts$/);
  });
});
