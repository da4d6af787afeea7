import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

const SRC = path.resolve(__dirname, '..', 'src');

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(path.join(dir, entry.name)) : entry.name.endsWith('.ts') ? [path.join(dir, entry.name)] : [],
  );
}

function importsOf(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/^import[^'"]*['"]([^'"]+)['"]/gm)].map((match) => match[1]);
}

const HTTP_OR_GRAPHQL = /^(fastify|@fastify\/|@apollo\/|@as-integrations\/|graphql|type-graphql)/;

describe('boundaries', () => {
  const files = sourceFiles();

  test('when a service is read, then it imports neither HTTP nor GraphQL code', () => {
    const services = files.filter((file) => file.endsWith('.service.ts'));
    expect(services.length).toBeGreaterThan(0);
    for (const file of services) {
      const forbidden = importsOf(file).filter((module) => HTTP_OR_GRAPHQL.test(module));
      expect({ file: path.relative(SRC, file), forbidden }).toEqual({ file: path.relative(SRC, file), forbidden: [] });
    }
  });

  test('when a resolver is read, then it imports no HTTP code and no database code', () => {
    for (const file of files.filter((f) => f.endsWith('.resolver.ts'))) {
      expect(importsOf(file).filter((m) => /^(fastify|typeorm|mysql2)/.test(m))).toEqual([]);
    }
  });

  test('when a REST controller is read, then it reaches data only through the resolver', () => {
    for (const file of files.filter((f) => f.endsWith('.controller.ts'))) {
      expect(importsOf(file).filter((m) => /^(typeorm|mysql2)|\.service$/.test(m))).toEqual([]);
    }
  });

  test('when file names are read, then they are kebab-case, with a dotted role suffix where they have a role', () => {
    for (const file of files) expect(path.basename(file)).toMatch(/^[0-9a-z]+(-[0-9a-z]+)*(\.[a-z]+(-[a-z]+)*)?\.ts$/);
  });
});
