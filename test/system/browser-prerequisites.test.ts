import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_CHROMIUM_PATH, requireChromium } from '../helpers/browser';

// The browser suites' one prerequisite beyond Node (CONTRIBUTING.md "Prerequisites"): a Chromium, found at
// CHROMIUM_PATH or /usr/bin/chromium. Without one they fail with one line, never skip.

jest.setTimeout(120_000);

const ROOT = path.resolve(__dirname, '..', '..');

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'chromium-path-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The message `requireChromium` throws for `env`; fails the test when it throws nothing. */
function refusal(env: NodeJS.ProcessEnv): Error {
  try {
    requireChromium(env);
  } catch (error) {
    return error as Error;
  }
  throw new Error(`requireChromium accepted ${JSON.stringify(env)}`);
}

describe('requireChromium', () => {
  test('when CHROMIUM_PATH names nothing, then one line says to point it at a Chromium or install Debian’s', () => {
    const error = refusal({ CHROMIUM_PATH: '/nonexistent' });
    expect(error.message).toBe(
      'The browser tests need Chromium, and CHROMIUM_PATH=/nonexistent is not an executable: point CHROMIUM_PATH at a Chromium or Chrome executable, or unset it to use /usr/bin/chromium (Debian: apt-get install chromium).',
    );
    expect(error.stack).toBe(error.message);
  });

  test('when CHROMIUM_PATH names a file that is not executable or a directory, then the same line', () => {
    const file = path.join(dir, 'not-executable');
    writeFileSync(file, '');
    chmodSync(file, 0o644);
    for (const chosen of [file, dir]) expect(refusal({ CHROMIUM_PATH: chosen }).message).toContain(`CHROMIUM_PATH=${chosen} is not an executable`);
  });

  test('when CHROMIUM_PATH names an executable file, then that file is used', () => {
    const file = path.join(dir, 'chrome');
    writeFileSync(file, '#!/bin/sh\n');
    chmodSync(file, 0o755);
    expect(requireChromium({ CHROMIUM_PATH: file })).toBe(file);
  });

  test('when CHROMIUM_PATH is unset or empty, then Debian’s /usr/bin/chromium is used', () => {
    // The browser suites need it on this machine, so it is there.
    expect(requireChromium({})).toBe(DEFAULT_CHROMIUM_PATH);
    expect(requireChromium({ CHROMIUM_PATH: '' })).toBe('/usr/bin/chromium');
  });
});

describe('a browser suite without Chromium', () => {
  test('when the Swagger UI suite runs with CHROMIUM_PATH=/nonexistent, then it fails with the one line and no Playwright log', async () => {
    const jest = require.resolve('jest/bin/jest');
    const run = await promisify(execFile)(process.execPath, [jest, '--ci', 'test/system/browser/swagger-ui.test.ts'], {
      cwd: ROOT,
      env: { ...process.env, CHROMIUM_PATH: '/nonexistent', FORCE_COLOR: '0' },
    }).then(
      () => ({ code: 0, output: '' }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, output: error.stdout + error.stderr }),
    );
    expect(run.code).toBe(1);
    const lines = run.output.split('\n').map((line) => line.trim());
    expect(lines).toContain('● Test suite failed to run');
    expect(lines.filter((line) => line.startsWith('The browser tests need Chromium'))).toEqual([
      'The browser tests need Chromium, and CHROMIUM_PATH=/nonexistent is not an executable: point CHROMIUM_PATH at a Chromium or Chrome executable, or unset it to use /usr/bin/chromium (Debian: apt-get install chromium).',
    ]);
    expect(run.output).not.toMatch(/playwright|Call log|browserType\.launch|\bat \S+:\d+:\d+/i);
    expect(run.output).not.toMatch(/skipped/);
  });
});
