import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..', '..');

const FORMAT_HOST: ts.FormatDiagnosticsHost = {
  getCanonicalFileName: (file) => file,
  getCurrentDirectory: () => ROOT,
  getNewLine: () => '\n',
};

/** Compiles `program` and emits it unless it has errors; returns each error as tsc prints it (`file(line,col): error TS…`), none when it compiled. */
function emitted(program: ts.Program): string[] {
  const before = ts.getPreEmitDiagnostics(program);
  // With noEmitOnError, emit() reports the same errors again.
  const diagnostics = before.length > 0 ? before : program.emit().diagnostics;
  return diagnostics.map((diagnostic) => ts.formatDiagnostic(diagnostic, FORMAT_HOST).trim());
}

/**
 * Compiles `files` (and what they import) to JavaScript beside them, with the compiler options of
 * the repository's tsconfig.json (strict, CommonJS) and Node's types only.
 *
 * @param files - the entry points.
 * @param rootDir - the folder that holds them and their local imports; the JavaScript is written there.
 * @param lib - tsconfig's `lib`, e.g. `['ES2022', 'DOM']`; the repository's (ES2022) when left out.
 * @returns the errors, none when it compiled (nothing is emitted then).
 */
export function compileStrict(files: string[], rootDir: string, lib?: string[]): string[] {
  const { config } = ts.readConfigFile(path.join(ROOT, 'tsconfig.json'), (file) => ts.sys.readFile(file));
  const { options } = ts.parseJsonConfigFileContent({ ...config, compilerOptions: { ...config.compilerOptions, ...(lib && { lib }) } }, ts.sys, ROOT);
  return emitted(ts.createProgram(files, { ...options, rootDir, outDir: rootDir, types: ['node'], incremental: false, sourceMap: false, noEmitOnError: true }));
}

/**
 * Compiles a TypeScript project as `tsc -p` would.
 *
 * @param tsconfig - the project's tsconfig.json.
 * @returns the errors, none when it compiled (nothing is emitted then).
 */
export function compileProject(tsconfig: string): string[] {
  const { config, error } = ts.readConfigFile(tsconfig, (file) => ts.sys.readFile(file));
  if (error) return [ts.formatDiagnostic(error, FORMAT_HOST).trim()];
  const { options, fileNames, errors } = ts.parseJsonConfigFileContent(config, ts.sys, path.dirname(tsconfig));
  if (errors.length > 0) return errors.map((diagnostic) => ts.formatDiagnostic(diagnostic, FORMAT_HOST).trim());
  // incremental (the root's setting) is for tsc's own builds; a program of the API reads no build info.
  return emitted(ts.createProgram(fileNames, { ...options, incremental: false, noEmitOnError: true }));
}
