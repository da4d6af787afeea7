import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';

/** What Chromium sends when a person opens a page. */
export const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8';

/**
 * Where a browser test writes a screenshot: `test/output/screenshots/`, which git ignores, so
 * that a test run never rewrites a tracked file. `npm run docs:screenshots` runs the browser
 * suites and copies these over the documentation's, in `docs/screenshots/` (docs/explorers.md).
 *
 * @param file - the file name, e.g. `swagger-ui.png`.
 * @returns its absolute path (the folder may not exist yet).
 */
export function screenshotPath(file: string): string {
  return path.resolve(__dirname, '..', 'output', 'screenshots', file);
}

/** The Chromium the browser tests drive when `CHROMIUM_PATH` is unset: Debian's package (`apt-get install chromium`). */
export const DEFAULT_CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * The Chromium or Chrome executable the browser tests drive (CONTRIBUTING.md "Prerequisites"): the
 * `CHROMIUM_PATH` environment variable, or Debian's {@link DEFAULT_CHROMIUM_PATH}. Browser suites
 * call it at load time, so that without a browser each fails once, with this one line, instead
 * of a page of Playwright call logs per test; nothing is skipped.
 *
 * @param env - the environment to read `CHROMIUM_PATH` from (this process's by default).
 * @returns the absolute path of an executable file.
 * @throws Error whose message (and whole stack: no trace follows it) is one line naming the path
 *   tried and what to install or set, when that path is not an executable file.
 */
export function requireChromium(env: NodeJS.ProcessEnv = process.env): string {
  const chosen = env.CHROMIUM_PATH || DEFAULT_CHROMIUM_PATH;
  if (isExecutableFile(chosen)) return path.resolve(chosen);
  const error = new Error(
    env.CHROMIUM_PATH
      ? `The browser tests need Chromium, and CHROMIUM_PATH=${chosen} is not an executable: point CHROMIUM_PATH at a Chromium or Chrome executable, or unset it to use ${DEFAULT_CHROMIUM_PATH} (Debian: apt-get install chromium).`
      : `The browser tests need Chromium, and ${DEFAULT_CHROMIUM_PATH} is missing: install it (Debian: apt-get install chromium), or set CHROMIUM_PATH to a Chromium or Chrome executable.`,
  );
  error.stack = error.message;
  throw error;
}

function isExecutableFile(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Chromium's options: headless, with no background traffic of its own (nothing may leave the machine). */
const CHROMIUM = {
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--disable-quic',
  ],
};

/**
 * Opens a page in a fresh headless Chromium (playwright-core, never a downloaded browser): the
 * one {@link requireChromium} finds.
 *
 * @returns the browser, context and page, plus every URL the browser requested and every
 *   uncaught page error, collected as they happen.
 * @throws the one-line error of {@link requireChromium} when there is no Chromium to launch.
 */
export async function openBrowserPage(): Promise<{
  browser: Browser;
  context: BrowserContext;
  page: Page;
  requested: string[];
  pageErrors: string[];
}> {
  const browser = await chromium.launch({ ...CHROMIUM, executablePath: requireChromium() });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const requested: string[] = [];
  const pageErrors: string[] = [];
  context.on('request', (sent) => requested.push(sent.url()));
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  return { browser, context, page, requested, pageErrors };
}

/**
 * Collects what a page's Content-Security-Policy refuses, from before its first script runs:
 * every `securitypolicyviolation` event, as "<directive> <blocked URI>", and every console
 * error (Chromium also reports each refusal there, naming the hash an inline style would need).
 * Call it before `page.goto`. The page code is a string: the project compiles without the DOM
 * library.
 *
 * @returns `violations()`, which reads the events so far from the page, and `consoleErrors`,
 *   filled as they come.
 */
export async function collectCspViolations(page: Page): Promise<{ violations: () => Promise<string[]>; consoleErrors: string[] }> {
  const consoleErrors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  await page.addInitScript(`
    window.cspViolations = [];
    document.addEventListener('securitypolicyviolation', (event) => {
      window.cspViolations.push(event.violatedDirective + ' ' + event.blockedURI);
    });
  `);
  return { violations: () => page.evaluate<string[]>('window.cspViolations'), consoleErrors };
}
