import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

/** The service's specification, kept in the repository so that every link to it works in a clone. */
const IN_REPOSITORY = path.resolve(__dirname, '..', '..', 'docs', 'spec', 'pet-store-service.md');
/** Where the specification is maintained: a `shared/` folder beside the clone, as CI has it. */
const SHARED = path.resolve(__dirname, '..', '..', '..', 'shared', 'spec', 'pet-store-service.md');

describe('the specification', () => {
  test('when the repository is read, then it holds the specification', async () => {
    expect(await readFile(IN_REPOSITORY, 'utf8')).toMatch(/^# Pet Store Service Specification\n/);
  });

  // Reported as skipped, never left out, in a clone without shared/ beside it.
  (existsSync(SHARED) ? test : test.skip)('when shared/ is beside the clone, then the copy in docs/spec/ is the same text', async () => {
    expect(await readFile(IN_REPOSITORY, 'utf8')).toBe(await readFile(SHARED, 'utf8'));
  });
});
