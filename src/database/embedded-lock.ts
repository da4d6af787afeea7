import { mkdirSync, readFileSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import type { DatabaseConfig } from './database-config';

/** Who holds the lock: written into the lock directory by its holder. */
interface LockOwner {
  pid: number;
  hostname: string;
}

/** The lock directory proper-lockfile makes (`<file>.lock`) and the owner record inside it. */
function lockPaths(file: string): { directory: string; owner: string } {
  const directory = `${file}.lock`;
  return { directory, owner: path.join(directory, 'owner.json') };
}

function readOwner(file: string): LockOwner | null {
  try {
    const owner = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockOwner>;
    return Number.isSafeInteger(owner.pid) && typeof owner.hostname === 'string' ? (owner as LockOwner) : null;
  } catch {
    return null;
  }
}

/** Whether a process with this id exists on this machine: signal 0 checks without sending anything. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Whether the lock directory was left by a process that is gone: its owner record names a
 * process of this machine that no longer exists. A lock without a record (its holder is
 * between taking it and writing the record, or is older than the record) is never taken over.
 */
function heldByTheDead(ownerFile: string): boolean {
  const owner = readOwner(ownerFile);
  return owner !== null && owner.hostname === hostname() && owner.pid !== process.pid && !isAlive(owner.pid);
}

/** proper-lockfile's ELOCKED as the one line start-up prints; any other error as it is. */
function explained(file: string, error: unknown): unknown {
  if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') return error;
  return new Error(
    `The embedded database ${file} is in use by another process (a running server?). ` +
      'Stop it first, or set DATABASE_URL to a MySQL database that several processes can share.',
    { cause: error },
  );
}

/**
 * Takes the embedded database file for this process alone. sql.js keeps the database in
 * memory and rewrites the file after each write, so two processes on one file would lose
 * each other's writes; the lock turns that into a clear error instead.
 *
 * The lock is proper-lockfile's directory `<file>.lock`, holding `owner.json`
 * (`{"pid": 123, "hostname": "…"}`). A holder killed without a chance to clean up (`kill -9`,
 * a crash) leaves it behind: when its process is gone (`kill(pid, 0)` fails with ESRCH), the
 * next start takes the lock over at once instead of waiting for it to go stale (10 s,
 * proper-lockfile's own rule, which still applies when the record cannot tell, e.g. from
 * another host sharing the folder). Two processes taking over the same dead holder's lock in
 * the same instant can both believe they won; proper-lockfile's mtime check then reports the
 * lock compromised in one of them, which stops.
 *
 * @param database - the configured database; MySQL and in-memory databases need no lock.
 * @returns a function that releases the lock.
 * @throws Error naming the file when another living process (a running server, the apikey CLI) holds it.
 */
export async function lockEmbeddedDatabase(database: DatabaseConfig): Promise<() => Promise<void>> {
  if (database.type !== 'sqlite' || database.path === ':memory:') return async () => undefined;
  mkdirSync(path.dirname(database.path), { recursive: true });
  const { directory, owner } = lockPaths(database.path);
  const take = () => lockfile.lock(database.path, { realpath: false });
  let release: () => Promise<void>;
  try {
    release = await take();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // ENOTEMPTY: proper-lockfile found the lock stale but could not remove it (it holds owner.json).
    const abandoned = (code === 'ELOCKED' && heldByTheDead(owner)) || code === 'ENOTEMPTY';
    if (!abandoned) throw explained(database.path, error);
    rmSync(directory, { recursive: true, force: true });
    release = await take().catch((again: unknown) => {
      throw explained(database.path, again);
    });
  }
  // proper-lockfile keeps the directory's mtime fresh and takes any other mtime for a takeover
  // (ECOMPROMISED): adding the record changes it, so it is put back, in the same tick.
  const { atime, mtime } = statSync(directory);
  writeFileSync(owner, `${JSON.stringify({ pid: process.pid, hostname: hostname() } satisfies LockOwner)}\n`);
  utimesSync(directory, atime, mtime);
  // On an exit without unlock (a failed start calls process.exit), leave no lock behind:
  // proper-lockfile's own exit handler cannot remove a directory that is not empty.
  const onExit = () => {
    rmSync(directory, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  return async () => {
    process.removeListener('exit', onExit);
    unlinkSync(owner);
    await release();
  };
}
