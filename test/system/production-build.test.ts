import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';

// The production install of docs/operations.md "Production install": the built dist/src/ runs with
// the production dependencies alone, and each script that builds first has a twin that does not.
// .ci/run runs the path itself on a fresh clone (.ci/production-install).

const ROOT = path.resolve(__dirname, '..', '..');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The package a module specifier names (`@scope/name/sub` → `@scope/name`), or undefined for a relative path or a Node built-in. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0])) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** Every package that each .js file under dist/src/ requires, as tsc emits CommonJS: `require("…")`. */
function requiredPackages(): Map<string, string[]> {
  const dist = path.join(ROOT, 'dist', 'src');
  const files = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.js'));
  const required = new Map<string, string[]>();
  for (const file of files) {
    for (const [, specifier] of readFileSync(path.join(dist, file), 'utf8').matchAll(/\brequire\("([^"]+)"\)/g)) {
      const name = packageOf(specifier);
      if (name) required.set(name, [...(required.get(name) ?? []), `dist/src/${file}`]);
    }
  }
  return required;
}

describe('the production build (docs/operations.md "Production install")', () => {
  test('when every file of the built dist/src/ is read, then each package it requires is in "dependencies", none in "devDependencies"', () => {
    const required = requiredPackages();
    // The scan sees the server's own packages: were tsc to emit another form, it would find none.
    expect([...required.keys()]).toEqual(expect.arrayContaining(['fastify', 'typeorm', 'graphql-ws']));
    const outside = [...required].filter(([name]) => !(name in pkg.dependencies)).map(([name, files]) => `${name} (${files.join(', ')})`);
    expect(outside).toEqual([]);
  });

  test('when the scripts are read, then each that builds first has a :prod twin running the same command without the build', () => {
    const building = Object.keys(pkg.scripts).filter((name) => pkg.scripts[`${name}:prod`] !== undefined);
    expect(building.sort()).toEqual(['apikey', 'db:migrate', 'db:revert', 'db:seed', 'demo:graphql', 'start', 'typeorm', 'webhook']);
    for (const name of building) {
      expect(pkg.scripts[name]).toBe(`tsc -b && ${pkg.scripts[`${name}:prod`]}`);
      expect(pkg.scripts[`${name}:prod`]).not.toMatch(/\btsc\b/);
    }
  });

  test('when docs/operations.md "Production install" is read, then it names every :prod script', () => {
    const doc = readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Production install'), doc.indexOf('\n## ', doc.indexOf('## Production install') + 1));
    for (const name of Object.keys(pkg.scripts).filter((script) => script.endsWith(':prod'))) expect(section).toContain(`\`${name}\``);
  });
});
