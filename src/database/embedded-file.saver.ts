import { rename, writeFile } from 'node:fs/promises';

/**
 * TypeORM's `autoSaveCallback` for sql.js, saving snapshots one at a time, in order, by rename: TypeORM's own saving lets an
 * older snapshot land last, and its truncating `writeFile` leaves a broken file if killed mid-save.
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
