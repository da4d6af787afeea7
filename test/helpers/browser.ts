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
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
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
