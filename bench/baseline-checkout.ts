import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A commit of this repository, checked out and built beside this checkout, for `--baseline`. */
export interface BaselineCheckout {
  /** The ref as given, e.g. `HEAD`, `main`, `v1.1.0`. */
  ref: string;
  /** Its commit, 40 hex digits. */
  commit: string;
  /** The commit's subject line. */
  subject: string;
  /** The worktree: the service is started there as `dist/src/main.js`. */
  directory: string;
  /** `shared`: its package-lock.json is this checkout's, so node_modules is a link to this checkout's; `installed`: `npm ci` ran there. */
  nodeModules: 'shared' | 'installed';
  /** Seconds to check out, install and build. */
  setupSeconds: number;
  /** Removes the worktree (`git worktree remove --force`) and its folder. */
  remove: () => Promise<void>;
}

const git = async (cwd: string, ...args: string[]) => (await run('git', args, { cwd, maxBuffer: 64 * 2 ** 20 })).stdout;

/**
 * Checks `ref` out in a detached git worktree in a new folder under the system's temporary
 * folder, gives it node_modules (a link to `root`'s when both package-lock.json are the same
 * file, else `npm ci`) and builds it with its own `tsc -b` (the service only: src/).
 *
 * @param root - this checkout (the repository root).
 * @throws when the ref names no commit, or the install or the build fails (the worktree is removed first).
 */
export async function checkOutBaseline(root: string, ref: string, log: (message: string) => void): Promise<BaselineCheckout> {
  const began = Date.now();
  const commit = (await git(root, 'rev-parse', '--verify', '--end-of-options', `${ref}^{commit}`)).trim();
  const subject = (await git(root, 'log', '-1', '--format=%s', commit)).trim();
  const directory = mkdtempSync(path.join(os.tmpdir(), 'petstore-bench-baseline-'));
  log(`Baseline: ${ref} = ${commit.slice(0, 12)} "${subject}", a worktree in ${directory}`);
  await git(root, 'worktree', 'add', '--detach', directory, commit);
  const remove = async () => {
    try {
      await git(root, 'worktree', 'remove', '--force', directory);
    } finally {
      rmSync(directory, { recursive: true, force: true });
      await git(root, 'worktree', 'prune');
    }
  };
  try {
    const lock = (folder: string) => readFileSync(path.join(folder, 'package-lock.json'), 'utf8');
    const shared = existsSync(path.join(root, 'node_modules')) && lock(directory) === lock(root);
    if (shared) {
      symlinkSync(path.join(root, 'node_modules'), path.join(directory, 'node_modules'), 'dir');
      log("Baseline: the same package-lock.json: node_modules linked to this checkout's");
    } else {
      log('Baseline: another package-lock.json: npm ci in the worktree');
      await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: directory, maxBuffer: 64 * 2 ** 20 });
    }
    log('Baseline: building (tsc -b)');
    await run(process.execPath, [path.join(directory, 'node_modules', 'typescript', 'bin', 'tsc'), '-b'], { cwd: directory, maxBuffer: 64 * 2 ** 20 });
    if (!existsSync(path.join(directory, 'dist', 'src', 'main.js'))) throw new Error(`${ref} built no dist/src/main.js`);
    const setupSeconds = (Date.now() - began) / 1000;
    log(`Baseline: ready in ${setupSeconds.toFixed(1)} s`);
    return { ref, commit, subject, directory, nodeModules: shared ? 'shared' : 'installed', setupSeconds, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}
