import path from 'node:path';
import { type Browser, type BrowserContext, type Page, chromium } from 'playwright-core';

/** What Chromium sends when a person opens a page. */
export const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8';

/** Where a browser test writes its screenshot for the README. */
export function screenshotPath(file: string): string {
  return path.resolve(__dirname, '..', '..', 'docs', 'screenshots', file);
}

/** Debian's Chromium, headless, with no background traffic of its own (nothing may leave the machine). */
const CHROMIUM = {
  executablePath: '/usr/bin/chromium',
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
 * Opens a page in a fresh headless Chromium (playwright-core, never a downloaded browser).
 *
 * @returns the browser, context and page, plus every URL the browser requested and every
 *   uncaught page error, collected as they happen.
 */
export async function openBrowserPage(): Promise<{
  browser: Browser;
  context: BrowserContext;
  page: Page;
  requested: string[];
  pageErrors: string[];
}> {
  const browser = await chromium.launch(CHROMIUM);
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
