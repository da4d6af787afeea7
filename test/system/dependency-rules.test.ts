import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const ESLINT = path.join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');

interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
}

/** Runs dependency-cruiser's CLI (an ES module, which jest cannot import) in `cwd` with the project's rules; its violations. */
function cruise(cwd: string, ...args: string[]): Promise<Violation[]> {
  return new Promise((resolve, reject) => {
    const argv = [DEPCRUISE, '--config', CONFIG, '--output-type', 'json', ...args];
    // A run that finds violations exits non-zero: the JSON on stdout says which.
    execFile(process.execPath, argv, { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      try {
        resolve((JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations);
      } catch {
        reject(new Error(`dependency-cruiser gave no report: ${error?.message ?? ''}\n${stderr}`));
      }
    });
  });
}

/** Runs ESLint's CLI (its config is an ES module too) in `cwd` with the eslint.config.mjs found there; each file's `no-restricted-syntax` messages. */
function restrictedSyntax(cwd: string, ...files: string[]): Promise<Record<string, string[]>> {
  return new Promise((resolve, reject) => {
    // A run that reports problems exits non-zero: the JSON on stdout says which.
    execFile(process.execPath, [ESLINT, '--format', 'json', ...files], { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      try {
        const results = JSON.parse(stdout) as Array<{ filePath: string; messages: Array<{ ruleId: string | null; message: string }> }>;
        resolve(
          Object.fromEntries(
            results.map((result) => [
              path.relative(cwd, result.filePath),
              result.messages.filter((message) => message.ruleId === 'no-restricted-syntax').map((message) => message.message),
            ]),
          ),
        );
      } catch {
        reject(new Error(`ESLint gave no report: ${error?.message ?? ''}\n${stderr}`));
      }
    });
  });
}

describe('the layer rules (.dependency-cruiser.cjs, and the seam in eslint.config.mjs)', () => {
  test('when the real tree is cruised as `npm run lint` does, then no rule is broken', async () => {
    expect(await cruise(ROOT, 'src', 'bench', 'test', 'examples')).toEqual([]);
  });

  describe('on a copy of src/ with forbidden imports added', () => {
    const probes: Array<[string, string, string, string]> = [
      // [rule, file, its code, the module it wrongly imports (a package by its name)]
      ['features-not-up', 'src/pets/forbidden-probe.ts', "import '../rest/pet.controller';", 'src/rest/pet.controller.ts'],
      ['base-not-to-features', 'src/database/forbidden-probe.ts', "import '../pets/pet.service';", 'src/pets/pet.service.ts'],
      ['data-source-only-entities', 'src/database/data-source.ts', "import '../pets/pet.service';", 'src/pets/pet.service.ts'],
      // circle-probe-b.ts imports circle-probe-a.ts (below): a two-file circle, reported once.
      ['no-circular', 'src/errors/circle-probe-a.ts', "import './circle-probe-b';", 'src/errors/circle-probe-b.ts'],
      ['rest-not-to-graphql', 'src/rest/forbidden-probe.ts', "import '../graphql/pet.resolver';", 'src/graphql/pet.resolver.ts'],
      ['graphql-not-to-rest', 'src/graphql/forbidden-probe.ts', "import '../rest/pet.controller';", 'src/rest/pet.controller.ts'],
      ['http-not-up', 'src/http/forbidden-probe.ts', "import '../graphql/pet.resolver';", 'src/graphql/pet.resolver.ts'],
      ['platform-not-up', 'src/observability/forbidden-probe.ts', "import '../pets/pet.service';", 'src/pets/pet.service.ts'],
      ['base-not-up', 'src/errors/forbidden-probe.ts', "import '../observability/logger';", 'src/observability/logger.ts'],
      ['surfaces-not-up', 'src/rest/app-probe.ts', "import '../app';", 'src/app.ts'],
      ['config-only-in-composition', 'src/validation/config-probe.ts', "import type { Config } from '../config';\nexport type C = Config;", 'src/config.ts'],
      ['pets-no-transport', 'src/pets/transport-probe.ts', "import type { FastifyRequest } from 'fastify';\nexport type R = FastifyRequest;", 'fastify'],
      ['not-to-test', 'src/pets/test-probe.ts', "import '../../test/helpers/probe';", 'test/helpers/probe.ts'],
      ['bench-only-to-support', 'bench/test-probe.ts', "import '../test/helpers/probe';", 'test/helpers/probe.ts'],
      ['support-stands-alone', 'test/support/helpers-probe.ts', "import '../helpers/probe';", 'test/helpers/probe.ts'],
      ['operations-no-type-graphql', 'src/pets/pet.service.ts', "import 'type-graphql';", 'type-graphql'],
      ['services-no-transport', 'src/auth/api-key.service.ts', "import 'ioredis';", 'ioredis'],
      ['adapters-through-operations', 'src/rest/pet.controller.ts', "import '../database/int64';", 'src/database/int64.ts'],
      ['src-not-to-bench', 'src/cli/bench-probe.ts', "import '../../bench/bench-probe';", 'bench/bench-probe.ts'],
      ['in-a-layer', 'src/unlayered/probe.ts', "import '../errors/error-catalogue';", 'src/errors/error-catalogue.ts'],
      ['not-to-examples', 'src/cli/examples-probe.ts', "import '../../examples/examples-probe';", 'examples/examples-probe.ts'],
      ['examples-only-clients', 'examples/src-probe.ts', "import '../src/errors/error-catalogue';", 'src/errors/error-catalogue.ts'],
      ['examples-only-clients', 'examples/test-probe.ts', "import '../test/helpers/probe';", 'test/helpers/probe.ts'],
      ['src-only-production-dependencies', 'src/cli/dev-dependency-probe.ts', "import 'graphql-request';", 'graphql-request'],
      ['src-only-production-dependencies', 'src/cli/require-probe.ts', "export const probe: unknown = require('axios');", 'axios'],
      // Installed for a dependency of ours, so gone when that one drops it: name it in "dependencies" to use it.
      ['src-only-production-dependencies', 'src/observability/undeclared-probe.ts', "import 'pino-std-serializers';", 'pino-std-serializers'],
    ];
    let tree: string;
    let violations: Violation[];
    let linted: Record<string, string[]>;

    beforeAll(async () => {
      // A copy, so that the probes never reach the real src/ that other suites and the build read.
      tree = mkdtempSync(path.join(tmpdir(), 'dependency-rules-'));
      try {
        cpSync(path.join(ROOT, 'src'), path.join(tree, 'src'), { recursive: true });
        for (const file of ['package.json', 'tsconfig.json', 'tsconfig.eslint.json', 'eslint.config.mjs']) cpSync(path.join(ROOT, file), path.join(tree, file));
        symlinkSync(path.join(ROOT, 'node_modules'), path.join(tree, 'node_modules'));
        const extra: Array<[string, string]> = [
          ['src/errors/circle-probe-b.ts', "import './circle-probe-a';"],
          ['test/helpers/probe.ts', 'export {};'],
          ['bench/bench-probe.ts', 'export {};'],
          ['examples/examples-probe.ts', 'export {};'],
          // Reached by the pet operations through pet.repository.ts.
          ['src/database/int64.ts', "import type { FastifyRequest } from 'fastify';\nexport type ProbeRequest = FastifyRequest;"],
          // ESLint's seam: the operations read no header and name no request; a surface casts no input.
          ['src/pets/pet.service.ts', "export const probeHeader = (request: { headers: Record<string, string> }) => request.headers['x'];"],
          ['src/rest/pet.controller.ts', 'export const probeCast = (input: unknown) => input as unknown as NewPetInput;'],
          // A type from a devDependency is erased from dist/: allowed.
          ['src/cli/dev-type-probe.ts', "import type { GraphQLClient } from 'graphql-request';\nexport type ProbeClient = GraphQLClient;"],
        ];
        for (const [file, code] of [...probes.map(([, file, code]): [string, string] => [file, code]), ...extra]) {
          mkdirSync(path.dirname(path.join(tree, file)), { recursive: true });
          writeFileSync(path.join(tree, file), `${code}\n`, { flag: 'a' });
        }
        violations = await cruise(tree, 'src', 'bench', 'test', 'examples');
        linted = await restrictedSyntax(tree, 'src/pets/pet.service.ts', 'src/rest/pet.controller.ts', 'src/pets/pet.repository.ts');
      } catch (error) {
        rmSync(tree, { recursive: true, force: true });
        throw error;
      }
    });
    afterAll(() => rmSync(tree, { recursive: true, force: true }));

    test.each(probes)('when %s is broken (%s), then it is reported for that import', (rule, from, _code, to) => {
      const reported = violations.filter((violation) => violation.rule.name === rule && violation.from === from);
      expect(reported.map((violation) => violation.to)).toContainEqual(to.includes('/') ? to : expect.stringContaining(`node_modules/${to}/`));
      expect(reported.every((violation) => violation.rule.severity === 'error')).toBe(true);
    });

    test('when the pet operations read a header and name a request, then ESLint reports both; a file without either, nothing', () => {
      expect(linted['src/pets/pet.service.ts']).toEqual(
        expect.arrayContaining(['The pet operations read no header: the surface passes the value on.', 'The pet operations know no HTTP request or reply.']),
      );
      expect(linted['src/pets/pet.repository.ts']).toEqual([]);
    });

    test('when a surface casts its input to a validated type, then ESLint reports it', () => {
      expect(linted['src/rest/pet.controller.ts']).toEqual(['Pass the input on as received: the pet operations validate it.']);
    });

    test('when src/ imports only a type from a devDependency, then src-only-production-dependencies leaves it: types are erased', () => {
      expect(violations.filter((violation) => violation.from === 'src/cli/dev-type-probe.ts')).toEqual([]);
    });

    test('when a module the pet operations reach imports a transport, then operations-no-transport reports the path from them', () => {
      const reported = violations.filter((violation) => violation.rule.name === 'operations-no-transport');
      expect(reported).toContainEqual(expect.objectContaining({ from: 'src/pets/pet.service.ts', to: expect.stringContaining('node_modules/fastify/') }));
    });
  });
});
