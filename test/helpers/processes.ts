import { type ChildProcessWithoutNullStreams, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ApiKeyService } from '../../src/auth/api-key.service';
import type { DatabaseConfig } from '../../src/database/database-config';
import { openDatabase } from '../../src/database/open-database';
import { freePort } from '../support/free-port';
import { createProcessDatabase } from './test-database';

// Defined in test/support/, where the bench finds it too.
export { freePort };

const ROOT = path.resolve(__dirname, '..', '..');

/** Path of a built entry point under dist/ (built by `npm run test:system` before jest runs). */
export function built(relative: string): string {
  const file = path.join(ROOT, 'dist', relative);
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` (npm run test:system does it)`);
  return file;
}

/** The environment of a child process: this one's minus the database settings, plus `env`. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const { DATABASE_URL: _d, TEST_DATABASE_URL: _t, PORT: _p, ...rest } = process.env;
  return { ...rest, NODE_ENV: 'test', LOG_LEVEL: 'warn', ...env };
}

/** Runs a built script to completion; never throws on a non-zero exit. */
export function runNode(script: string, args: string[], options: { cwd: string; env?: Record<string, string> }) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(process.execPath, [script, ...args], { cwd: options.cwd, env: childEnv(options.env ?? {}) }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Runs a command of node_modules/.bin (a generator's CLI) in `cwd`, the repository's root by default; rejects with its output when it fails. */
export function runBin(bin: string, args: string[], cwd = ROOT): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(path.join(ROOT, 'node_modules', '.bin', bin), args, { cwd }, (error, stdout, stderr) =>
      error ? reject(new Error(`${bin} ${args.join(' ')} failed:\n${stdout}\n${stderr}`)) : resolve(stdout),
    );
  });
}

/** Starts a built script in the background, with `execArgv` before it on node's command line; collects its output. */
export function startNode(script: string, options: { cwd: string; env?: Record<string, string>; execArgv?: string[] }) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [...(options.execArgv ?? []), script], {
    cwd: options.cwd,
    env: childEnv(options.env ?? {}),
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk) => (output.stdout += chunk));
  child.stderr.on('data', (chunk) => (output.stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output, exited };
}

/** Polls `url` until it answers (any status) or `timeoutMs` passes. */
export async function waitForHttp(url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await fetch(url);
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Polls the collected output until `stream` contains `text`; throws, with the output, after `timeoutMs`. */
export async function waitForOutput(
  server: ReturnType<typeof startNode>,
  text: string,
  stream: 'stdout' | 'stderr' = 'stdout',
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!server.output[stream].includes(text)) {
    if (Date.now() > deadline) throw new Error(`no "${text}" on ${stream} within ${timeoutMs} ms:\n${server.output.stdout}\n${server.output.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Runs the built server (`dist/src/main.js`) on a free port for the length of `use`, then
 * stops it with SIGTERM.
 *
 * @param options.env - its environment (PORT is chosen here).
 * @param use - gets the process (with its collected output) and its base URL, once it answers
 *   (and, on the embedded database outside production, once it has printed its development key line).
 * @returns the server's exit code.
 */
export async function withServer(
  options: { cwd: string; env?: Record<string, string> },
  use: (server: ReturnType<typeof startNode>, base: string) => Promise<void>,
): Promise<number | null> {
  const port = await freePort();
  const metricsPort = await freePort();
  const server = startNode(built('src/main.js'), {
    cwd: options.cwd,
    env: { METRICS_PORT: String(metricsPort), ...options.env, PORT: String(port) },
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${base}/v1/pets`);
    // The development key is seen to once the server listens: wait for its line (every start on
    // the embedded database outside production prints one).
    const env = childEnv(options.env ?? {});
    if (!env.DATABASE_URL && env.NODE_ENV !== 'production') await waitForOutput(server, 'dev-api-key');
    await use(server, base);
  } finally {
    server.child.kill('SIGTERM');
  }
  return server.exited;
}

/**
 * An API key to call a built server started with {@link startNode} in `cwd` on `database` (see
 * `createProcessDatabase`): on MySQL a new key, created through ApiKeyService (no development
 * key is made there); on the embedded database the development key, read once the server has
 * printed its line (it writes the file just after it listens, docs/api-keys.md "The development key").
 *
 * @param name - the new key's name, on MySQL.
 * @returns the key, as sent after `Bearer `.
 * @throws Error when the embedded server prints no key line within 10 s.
 */
export async function apiKeyFor(
  server: ReturnType<typeof startNode>,
  { cwd, database }: { cwd: string; database: DatabaseConfig },
  name: string,
): Promise<string> {
  if (database.type === 'mysql') {
    const opened = await openDatabase(database);
    try {
      return (await new ApiKeyService(opened).create(name)).key;
    } finally {
      await opened.close();
    }
  }
  await waitForOutput(server, 'dev-api-key');
  return (await readFile(path.join(cwd, 'data', 'dev-api-key'), 'utf8')).trim();
}

/**
 * The built server (`dist/src/main.js`) on a test database of its own ({@link createProcessDatabase}), as a client
 * meets it: listening on a free port, with an API key ({@link apiKeyFor}).
 *
 * @param prefix - the start of its working directory's name, e.g. `examples-`.
 * @param options.env - more of its environment, e.g. `TRUSTED_DOCUMENTS`.
 * @param options.publishableKey - also create a publishable key (with the apikey CLI, before the server holds the database).
 * @param options.execArgv - node's options before the script, e.g. `--require` of a preload.
 * @returns its base URL (no trailing slash), the key, the publishable key when asked for (else ''), its working
 *   directory, the process, and `stop()`, which ends it with SIGTERM and drops its database.
 */
export async function startBuiltServer(prefix: string, options: { env?: Record<string, string>; publishableKey?: boolean; execArgv?: string[] } = {}) {
  const setup = await createProcessDatabase(prefix);
  const port = await freePort();
  let publishableKey = '';
  if (options.publishableKey) {
    const created = await runNode(built('src/cli/apikey.cli.js'), ['create', `${prefix}web`, '--kind', 'publishable'], { cwd: setup.cwd, env: setup.env });
    if (created.code !== 0) throw new Error(`apikey create failed: ${created.stderr}`);
    publishableKey = created.stdout.trim();
  }
  const server = startNode(built('src/main.js'), {
    cwd: setup.cwd,
    env: { ...setup.env, ...options.env, PORT: String(port), METRICS_PORT: String(await freePort()) },
    execArgv: options.execArgv,
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${url}/healthz`);
    const apiKey = await apiKeyFor(server, setup, prefix);
    const stop = async () => {
      server.child.kill('SIGTERM');
      await server.exited;
      await setup.drop();
    };
    return { url, apiKey, publishableKey, cwd: setup.cwd, server, stop };
  } catch (error) {
    server.child.kill('SIGKILL');
    await setup.drop();
    throw error;
  }
}
