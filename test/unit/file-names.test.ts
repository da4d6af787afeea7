import { readdirSync } from 'node:fs';
import path from 'node:path';

/** Every .ts file under src/, by its path from src/. */
const sourceFiles = readdirSync(path.resolve(__dirname, '..', '..', 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts'));

describe('file names of src/ (docs/architecture.md "Layout")', () => {
  test('when read, then they are kebab-case, with a dotted role suffix where they have a role', () => {
    expect(sourceFiles.length).toBeGreaterThan(50);
    const misnamed = sourceFiles.filter((file) => !/^[0-9a-z]+(-[0-9a-z]+)*(\.[a-z]+(-[a-z]+)*)?\.ts$/.test(path.basename(file)));
    expect(misnamed).toEqual([]);
  });
});
