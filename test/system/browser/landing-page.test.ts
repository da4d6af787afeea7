import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { SURFACES } from '../../../src/http/landing-page.routes';
import { collectCspViolations, openBrowserPage, requireChromium, screenshotPath } from '../../helpers/browser';
import { startTestApp, type TestApp } from '../../helpers/test-app';

// The landing page at / (README "Two commands"), as a newcomer's browser shows it, in Debian's Chromium.

jest.setTimeout(60_000);

// Without a browser, the suite stops here with one line that says what to install (CONTRIBUTING.md "Prerequisites").
requireChromium();

const SCREENSHOT = screenshotPath('landing-page.png');

let t: TestApp;
let browser: Browser;
let page: Page;
let pageErrors: string[];
let cspViolations: () => Promise<string[]>;
beforeAll(async () => {
  t = await startTestApp();
  ({ browser, page, pageErrors } = await openBrowserPage());
  ({ violations: cspViolations } = await collectCspViolations(page));
});
afterAll(async () => {
  await browser?.close();
  await t.close();
});

test('when a newcomer opens /, then the page links every surface, styled, with nothing the CSP refuses', async () => {
  const navigation = await page.goto(`${t.url}/`);
  expect(navigation?.status()).toBe(200);
  await expect(page.title()).resolves.toBe('Pet Store gateway');
  const links = await page
    .locator('a')
    .evaluateAll((anchors) => anchors.map((anchor) => (anchor as unknown as { getAttribute(name: string): string }).getAttribute('href')));
  expect(links).toEqual(SURFACES.map((surface) => surface.path));
  mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
  await page.screenshot({ path: SCREENSHOT });
  expect(pageErrors).toEqual([]);
  expect(await cspViolations()).toEqual([]);
});

test('when the newcomer follows the docs and graphql links, then Swagger UI and the GraphiQL key form open', async () => {
  await page.locator('a[href="/docs"]').click();
  await page.locator('.swagger-ui .info .title').waitFor();
  await page.goBack();
  await page.locator('a[href="/graphql"]').click();
  await page.locator('#key-input').waitFor();
  expect(pageErrors).toEqual([]);
});
