import { mkdirSync, readFileSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import type { DatabaseConfig } from './database-config';

interface LockOwner {
  pid: number;
  hostname: string;
}

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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** A lock without a record (its holder has not written it yet) is never taken over. */
function heldByTheDead(ownerFile: string): boolean {
  const owner = readOwner(ownerFile);
  return owner !== null && owner.hostname === hostname() && owner.pid !== process.pid && !isAlive(owner.pid);
}

function explained(file: string, error: unknown): unknown {
  if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') return error;
  return new Error(
    `The embedded database ${file} is in use by another process (a running server?). ` +
      'Stop it first, or set DATABASE_URL to a MySQL database that several processes can share.',
    { cause: error },
  );
}

/**
 * Takes the embedded database file for this process alone, returning the release: sql.js rewrites the whole file after each
 * write, so two processes would lose each other's writes. `<file>.lock/owner.json` names the holder, so the lock of a killed
 * holder of this host is taken over at once rather than after proper-lockfile's 10 s staleness; if two take it over at once,
 * proper-lockfile's mtime check stops one. Throws, naming the file, while a living process holds it.
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
    // ENOTEMPTY: proper-lockfile found it stale but cannot remove a directory holding owner.json.
    const abandoned = (code === 'ELOCKED' && heldByTheDead(owner)) || code === 'ENOTEMPTY';
    if (!abandoned) throw explained(database.path, error);
    rmSync(directory, { recursive: true, force: true });
    release = await take().catch((again: unknown) => {
      throw explained(database.path, again);
    });
  }
  // proper-lockfile takes any mtime but its own for a takeover (ECOMPROMISED): put it back after writing the record.
  const { atime, mtime } = statSync(directory);
  writeFileSync(owner, `${JSON.stringify({ pid: process.pid, hostname: hostname() } satisfies LockOwner)}\n`);
  utimesSync(directory, atime, mtime);
  // proper-lockfile's exit handler cannot remove a non-empty directory (a failed start calls process.exit).
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
