import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { lockEmbeddedDatabase } from '../../src/database/embedded-lock';

/** The embedded database's lock (src/database/embedded-lock.ts, docs/api-keys.md). */
describe('the embedded database lock', () => {
  const database = async () => ({ type: 'sqlite' as const, path: path.join(await mkdtemp(path.join(tmpdir(), 'lock-')), 'petstore.sqlite') });
  /** The id of a process that has exited. */
  const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid;

  test('when it is held past its refresh (5 s), then it is still held: the owner record does not make it look taken over', async () => {
    const db = await database();
    const unlock = await lockEmbeddedDatabase(db);
    const compromised: unknown[] = [];
    process.on('uncaughtException', (error) => compromised.push(error));
    await new Promise((resolve) => setTimeout(resolve, 6_500));
    expect(compromised).toEqual([]);
    expect(JSON.parse(await readFile(`${db.path}.lock/owner.json`, 'utf8'))).toEqual({ pid: process.pid, hostname: hostname() });
    await expect(lockEmbeddedDatabase(db)).rejects.toThrow(/in use by another process/);
    await unlock();
  }, 15_000);

  test('when its holder is gone, then it is taken over at once; when the holder lives or is unknown, then it is refused', async () => {
    const db = await database();
    const leave = (owner: object | null) => {
      mkdirSync(`${db.path}.lock`, { recursive: true });
      if (owner) writeFileSync(`${db.path}.lock/owner.json`, JSON.stringify(owner));
    };
    leave({ pid: deadPid(), hostname: hostname() });
    const unlock = await lockEmbeddedDatabase(db);
    await unlock();

    leave({ pid: process.ppid, hostname: hostname() }); // alive
    await expect(lockEmbeddedDatabase(db)).rejects.toThrow(/in use by another process/);
    leave({ pid: deadPid(), hostname: 'another-host' }); // cannot be checked from here
    await expect(lockEmbeddedDatabase(db)).rejects.toThrow(/in use by another process/);
  });
});
