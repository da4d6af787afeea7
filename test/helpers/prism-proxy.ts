import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePort } from './processes';

const ROOT = path.resolve(__dirname, '..', '..');

/** Set to run the REST requests of the suite through Stoplight Prism's validation proxy. */
export const THROUGH_PRISM = process.env.TEST_THROUGH_PRISM === '1';

/**
 * What Prism reported, counted across the process: responses it checked, violations it found in
 * them (each fails its request's test), and violations in the requests (the suites send bad
 * requests on purpose; Prism passes them on).
 */
export const prismCounts = { requests: 0, responseViolations: 0, requestViolations: 0 };

/**
 * Starts `prism proxy contract/openapi.json <upstream>/v1` on a free port.
 *
 * @param upstream - the app's base URL, e.g. http://127.0.0.1:41234.
 * @returns Prism's base URL (its paths are the document's, without /v1) and a stop function.
 * @throws when Prism has not said it is listening within 60 s.
 */
export async function startPrism(upstream: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn(
    path.join(ROOT, 'node_modules', '.bin', 'prism'),
    ['proxy', path.join(ROOT, 'contract', 'openapi.json'), `${upstream}/v1`, '--host', '127.0.0.1', '--port', String(port)],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Prism did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Prism is listening')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`Prism exited with ${code}:\n${output}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * Reads Prism's `sl-violations` header.
 *
 * @throws Error listing them when Prism found the response in breach of the document.
 */
export function assertNoResponseViolations(where: string, headers: Headers): void {
  prismCounts.requests += 1;
  const header = headers.get('sl-violations');
  if (!header) return;
  const violations: Array<{ location: string[]; message: string }> = JSON.parse(header);
  const onResponse = violations.filter((v) => v.location[0] === 'response');
  prismCounts.requestViolations += violations.length - onResponse.length;
  prismCounts.responseViolations += onResponse.length;
  if (onResponse.length > 0)
    throw new Error(`${where}: Prism found response violations: ${onResponse.map((v) => `${v.location.join('.')}: ${v.message}`).join('; ')}`);
}
