import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { saveInOrder } from '../../src/database/embedded-file.saver';
import { openDatabase } from '../../src/database/open-database';
import { Pet } from '../../src/pets/pet.entity';
import { seedPets } from '../../src/pets/pet.seed';
import { request, startTestApp } from '../helpers/test-app';

/**
 * The embedded database as `npm start` uses it: a file that sql.js rewrites after every write
 * (docs/configuration.md, DATABASE_URL unset). Runs in both passes: it needs no server.
 */
describe('the embedded database file', () => {
  test('when 60 creates are answered 201 at once, then all 60 are in the file when it is opened again', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'embedded-'));
    const file = path.join(dir, 'petstore.sqlite');
    try {
      const t = await startTestApp({ database: { type: 'sqlite', path: file } });
      try {
        // A file of some size (about 1 MB), so that writing it takes a while, as in real use.
        await seedPets(t.dataSource, 10_000);
        const answers = await Promise.all(
          Array.from({ length: 60 }, (_, i) => request(t, 'POST', '/v1/pets', { body: { name: `Saved ${i}`, categoryId: 1 } })),
        );
        expect(answers.map((answer) => answer.status)).toEqual(Array(60).fill(201));
        // Read the file as a crash right now would leave it: every answered create must be in it.
        const reopened = await openDatabase({ type: 'sqlite', path: file });
        try {
          expect(await reopened.writer.getRepository(Pet).count()).toBe(10_060);
        } finally {
          await reopened.close();
        }
      } finally {
        await t.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('when snapshots are saved faster than the disk takes them, then the file ends with the last one, whole', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'embedded-'));
    const file = path.join(dir, 'petstore.sqlite');
    try {
      const save = saveInOrder(file);
      // Older snapshots are larger, so each takes longer to write than the next (plain
      // concurrent writeFile calls then end with an older one: 50 of 50 tries on this machine).
      const snapshots = Array.from({ length: 20 }, (_, i) => new Uint8Array((20 - i) * 100_000).fill(i));
      await Promise.all(snapshots.map((snapshot) => save(snapshot)));
      expect(Buffer.compare(await readFile(file), Buffer.from(snapshots[19]))).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
