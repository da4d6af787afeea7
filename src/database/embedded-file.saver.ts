import { rename, writeFile } from 'node:fs/promises';

/**
 * Saves the embedded database (sql.js, held in memory) to its file after each write, as
 * TypeORM's `autoSaveCallback`. TypeORM's own saving starts a `writeFile` per write without
 * waiting for the one before, so two saves in flight may land in either order and the older
 * snapshot can win; and `writeFile` truncates first, so a process killed mid-save leaves a
 * broken file. Here snapshots are written one at a time, in the order they were taken, each
 * to a temporary file renamed over the old one (atomic on POSIX file systems).
 *
 * @param file - the database file's path.
 * @returns the callback: it resolves once this snapshot (and every earlier one) is on disk.
 */
export function saveInOrder(file: string): (snapshot: Uint8Array) => Promise<void> {
  let last: Promise<void> = Promise.resolve();
  return (snapshot) => {
    last = last
      .catch(() => undefined)
      .then(async () => {
        await writeFile(`${file}.saving`, snapshot);
        await rename(`${file}.saving`, file);
      });
    return last;
  };
}
