import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser, Page, Response } from 'playwright-core';
import { OPENAPI_EXAMPLES } from '../../../src/rest/openapi.schemas';
import { SWAGGER_UI_TITLE } from '../../../src/rest/swagger-ui.options';
import { BROWSER_ACCEPT, collectCspViolations, openBrowserPage, requireChromium, screenshotPath } from '../../helpers/browser';
import { createPet, request, startTestApp, type TestApp } from '../../helpers/test-app';

// Swagger UI (GET /docs/, served by @fastify/swagger-ui from its own copy of swagger-ui-dist),
// driven in Debian's Chromium: authorize with an API key, try listPets, see the pets.

jest.setTimeout(90_000);

// Without a browser, the suite stops here with one line that says what to install (CONTRIBUTING.md "Prerequisites").
requireChromium();

const SCREENSHOT = screenshotPath('swagger-ui.png');
const FIRST_VISIT_SCREENSHOT = screenshotPath('swagger-ui-first-visit.png');

let t: TestApp;
let pets: any[];
beforeAll(async () => {
  t = await startTestApp();
  pets = [await createPet(t, { name: 'Rex', categoryId: 1 }), await createPet(t, { name: 'Whiskers', categoryId: 2 })];
});
afterAll(() => t.close());

describe('Swagger UI without a key', () => {
  test('when /docs/ and every asset it links are asked for without a key, then each answers 200 with its type', async () => {
    const page = await request(t, 'GET', '/docs/', { apiKey: null, headers: { accept: BROWSER_ACCEPT } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.body).toContain('<div id="swagger-ui"></div>');
    expect(page.body).toContain(`<title>${SWAGGER_UI_TITLE}</title>`);
    expect(SWAGGER_UI_TITLE).toBe('Pet Store gateway — REST API');
    // @fastify/swagger-ui's static CSP, only what Swagger UI needs: scripts, styles and calls
    // (connect-src falls back to default-src) only to this origin, no inline or eval'd script or
    // style (the base layout has no top bar, whose logo was the one inline <style>), and the
    // data: images of swagger-ui.css. The page in Chromium reports no violation (below).
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'self'; base-uri 'self'; frame-ancestors 'self'; img-src 'self' data:; object-src 'none'; " +
        "script-src 'self'; script-src-attr 'none'; style-src 'self'",
    );
    // Nothing in the page points off this origin, and it holds no data.
    expect(page.body).not.toMatch(/\/\/[a-z0-9]|https?:/i);
    expect(page.body).not.toContain('Rex');

    const links: string[] = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]);
    expect(links.map((link) => link.split('/').pop()).sort()).toEqual(
      ['favicon.svg', 'index.css', 'swagger-initializer.js', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'swagger-ui.css'].sort(),
    );
    for (const link of links) {
      expect(link).toMatch(/^\.\/static\/(theme\/)?[\w.-]+$/);
      const response = await fetch(new URL(link, `${t.url}/docs/`));
      expect({ link, status: response.status }).toEqual({ link, status: 200 });
      const type = link.endsWith('.css') ? 'text/css' : link.endsWith('.svg') ? 'image/svg+xml' : 'application/javascript';
      expect(response.headers.get('content-type')?.split(';')[0]).toBe(type);
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
  });

  test('when the initializer is read without a key, then it loads ./json in the base layout, has no validator, logo or key', async () => {
    const initializer = await request(t, 'GET', '/docs/static/swagger-initializer.js', { apiKey: null });
    expect(initializer.status).toBe(200);
    expect(initializer.body).toContain("url: resolveUrl('./json')");
    expect(initializer.body).toContain('validatorUrl: null');
    expect(initializer.body).toContain('"validatorUrl":null');
    expect(initializer.body).toContain('"tryItOutEnabled":true');
    // The base layout: no top bar, so neither the Fastify logo nor the "Explore" box.
    expect(initializer.body).toContain('"layout":"BaseLayout"');
    expect(initializer.body).not.toContain('data:image');
    expect(initializer.body).not.toContain(t.apiKey);
  });

  test('when the document Swagger UI loads is asked for without a key, then it is /v1/openapi.json', async () => {
    const shown = await request(t, 'GET', '/docs/json', { apiKey: null });
    const published = await request(t, 'GET', '/v1/openapi.json', { apiKey: null });
    expect(shown.status).toBe(200);
    expect(published.status).toBe(200);
    expect(shown.body).toEqual(published.body);
    expect(shown.body.servers[0].url).toBe('/v1');
    expect(shown.body.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
  });
});

// Browser code goes through strings or `globalThis as any`: the project compiles without the DOM library.
describe('Swagger UI in Chromium', () => {
  let browser: Browser;
  let page: Page;
  /** Every request the browser made for the page, its scripts, styles, images and calls. */
  let requested: string[] = [];
  let pageErrors: string[] = [];
  /** Content-Security-Policy violations (the page is served with @fastify/swagger-ui's static CSP) and console errors. */
  let csp: Awaited<ReturnType<typeof collectCspViolations>>;

  beforeAll(async () => {
    ({ browser, page, requested, pageErrors } = await openBrowserPage());
    csp = await collectCspViolations(page);
  });
  afterAll(async () => {
    await browser?.close();
  });

  test('when a person opens /docs/, then the page is titled for the service, with no top bar, logo or Explore box', async () => {
    mkdirSync(path.dirname(FIRST_VISIT_SCREENSHOT), { recursive: true });
    const navigation = await page.goto(`${t.url}/docs/`);
    expect(navigation?.status()).toBe(200);
    await page.locator('#operations-pets-listPets').waitFor();
    await expect(page.title()).resolves.toBe('Pet Store gateway — REST API');
    await expect(page.locator('.topbar, .download-url-wrapper, .topbar-wrapper').count()).resolves.toBe(0);
    await expect(page.locator('#swagger-ui img').count()).resolves.toBe(0);
    await expect(page.getByRole('button', { name: 'Explore' }).count()).resolves.toBe(0);
    await expect(page.locator('input[value$="/docs/json"]').count()).resolves.toBe(0);
    await expect(page.locator('link[rel="icon"]').getAttribute('href')).resolves.toBe('./static/theme/favicon.svg');
    await expect(page.locator('.information-container .title').innerText()).resolves.toContain('Pet Store');
    // The first visit, as a newcomer sees it.
    await page.screenshot({ path: FIRST_VISIT_SCREENSHOT });
  });

  test('when a person opens /docs/, then the three operations show, getPet as deprecated', async () => {
    const listPets = page.locator('#operations-pets-listPets');
    const createPetBlock = page.locator('#operations-pets-createPet');
    const getPet = page.locator('#operations-pets-getPet');
    await listPets.waitFor();
    const summary = async (block: typeof listPets) => ({
      method: await block.locator('.opblock-summary-method').innerText(),
      path: await block.locator('[data-path]').getAttribute('data-path'),
      pathClass: await block.locator('[data-path]').getAttribute('class'),
    });
    await expect(summary(listPets)).resolves.toEqual({ method: 'GET', path: '/pets', pathClass: 'opblock-summary-path' });
    await expect(summary(createPetBlock)).resolves.toEqual({ method: 'POST', path: '/pets', pathClass: 'opblock-summary-path' });
    // Deprecated: the block is greyed (opblock-deprecated) and its path struck through.
    await expect(summary(getPet)).resolves.toEqual({ method: 'GET', path: '/pets/{petId}', pathClass: 'opblock-summary-path__deprecated' });
    await expect(getPet.getAttribute('class')).resolves.toContain('opblock-deprecated');
    await expect(listPets.getAttribute('class')).resolves.not.toContain('opblock-deprecated');
    await expect(createPetBlock.getAttribute('class')).resolves.not.toContain('opblock-deprecated');
    // The server list starts with this server; no validator badge is drawn.
    await expect(page.locator('.servers select').inputValue()).resolves.toBe('/v1');
    await expect(page.locator('a[href*="validator.swagger.io"], img[src*="validator.swagger.io"]').count()).resolves.toBe(0);
  });

  test('when the person authorizes with the key and executes GET /pets, then 200 with the pets, sent with the key', async () => {
    // Authorize: type the key in the bearerAuth field of the dialog, confirm, close.
    await page.locator('.scheme-container .btn.authorize').click();
    const dialog = page.locator('.dialog-ux .modal-ux');
    await dialog.waitFor();
    const bearer = dialog.locator('.auth-container').filter({ hasText: 'bearerAuth' });
    await bearer.locator('input#auth-bearer-value').fill(t.apiKey);
    await bearer.locator('.auth-btn-wrapper button.authorize').click();
    await expect(bearer.locator('h6').innerText()).resolves.toBe('Authorized');
    await expect(bearer.innerText()).resolves.toContain('******');
    await expect(bearer.innerText()).resolves.not.toContain(t.apiKey);
    await dialog.locator('button.btn-done').click();
    await dialog.waitFor({ state: 'detached' });
    await expect(page.locator('.scheme-container .btn.authorize').getAttribute('class')).resolves.toContain('locked');

    // Expand listPets and execute. The gateway sets tryItOutEnabled, so an expanded operation
    // is already in "Try it out" mode: its button offers "Cancel" (clicking it would leave
    // the mode and hide Execute).
    const listPets = page.locator('#operations-pets-listPets');
    await listPets.locator('.opblock-summary-control').click();
    await expect(listPets.locator('.try-out__btn').innerText()).resolves.toBe('Cancel');
    const answered = page.waitForResponse((response: Response) => new URL(response.url()).pathname === '/v1/pets' && response.request().method() === 'GET');
    await listPets.locator('.btn.execute').click();
    const response = await answered;

    // What went over the network.
    expect(new URL(response.url()).origin).toBe(t.url);
    expect(response.status()).toBe(200);
    expect(response.request().headers().authorization).toBe(`Bearer ${t.apiKey}`);
    const expectedPets = pets.map(({ id, name }) => expect.objectContaining({ id, name }));
    expect(await response.json()).toEqual(expectedPets);

    // What the page shows: the live response, code 200, with both names.
    const live = listPets.locator('.live-responses-table .response');
    await live.waitFor();
    await expect(live.locator('.response-col_status').innerText()).resolves.toBe('200');
    const body = live.locator('.response-col_description .highlight-code');
    for (const pet of pets) await expect(body.innerText()).resolves.toContain(`"${pet.name}"`);
    await expect(listPets.locator('.request-url pre').innerText()).resolves.toBe(`${t.url}/v1/pets?limit=20`);

    // The key shows in one place only, the curl command, which is masked in the screenshot;
    // it was not stored in the browser either (persistAuthorization is off).
    const curl = listPets.locator('.curl-command');
    await expect(curl.innerText()).resolves.toContain(`Authorization: Bearer ${t.apiKey}`);
    await expect(
      page.evaluate((key) => {
        const document = (globalThis as any).document;
        const copy = document.body.cloneNode(true);
        for (const node of copy.querySelectorAll('.curl-command')) node.remove();
        // Field values are not cloned: read them on the page itself.
        return copy.textContent.includes(key) || [...document.querySelectorAll('input, textarea')].some((field: any) => field.value.includes(key));
      }, t.apiKey),
    ).resolves.toBe(false);
    await expect(page.evaluate('JSON.stringify(localStorage) + JSON.stringify(sessionStorage)')).resolves.not.toContain(t.apiKey);

    // The executed operation, from its summary to the live response.
    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await listPets.scrollIntoViewIfNeeded();
    const top = await listPets.boundingBox();
    const bottom = await live.boundingBox();
    const scroll = await page.evaluate<{ x: number; y: number }>('({ x: scrollX, y: scrollY })');
    await page.screenshot({
      path: SCREENSHOT,
      fullPage: true,
      clip: { x: top!.x + scroll.x, y: top!.y + scroll.y, width: top!.width, height: bottom!.y + bottom!.height - top!.y },
      mask: [curl],
      maskColor: '#d9dce3',
    });

    expect(pageErrors).toEqual([]);
    // The CSP refused nothing.
    await expect(csp.violations()).resolves.toEqual([]);
    expect(csp.consoleErrors).toEqual([]);
  });

  test('when the person opens createPet, then the body is the NewPet example and the responses show real examples', async () => {
    const createPetBlock = page.locator('#operations-pets-createPet');
    await createPetBlock.locator('.opblock-summary-control').click();
    const body = createPetBlock.locator('.body-param textarea');
    await body.waitFor();
    expect(JSON.parse(await body.inputValue())).toEqual({ name: 'Rex', categoryId: 1, status: 'available' });
    expect(JSON.parse(await body.inputValue())).toEqual(OPENAPI_EXAMPLES.newPet);
    // The example of the 201 response is the Pet; the 401's is the catalogue's error with status 401.
    const example = async (status: number) =>
      JSON.parse(await createPetBlock.locator(`.responses-table tr.response[data-code="${status}"] .highlight-code`).first().innerText());
    await expect(example(201)).resolves.toEqual(OPENAPI_EXAMPLES.pet);
    await expect(example(401)).resolves.toEqual({
      code: 'UNAUTHENTICATED',
      message: 'A valid API key is required: send Authorization: Bearer <API_KEY>.',
      status: 401,
    });
    await expect(example(413)).resolves.toMatchObject({ code: 'PAYLOAD_TOO_LARGE', status: 413 });
    await createPetBlock.screenshot({ path: screenshotPath('swagger-ui-create-pet.png') });
    expect(pageErrors).toEqual([]);
    await expect(csp.violations()).resolves.toEqual([]);
    expect(csp.consoleErrors).toEqual([]);
  });

  test('when every request the browser made is listed, then none left 127.0.0.1', () => {
    expect(requested.length).toBeGreaterThan(6);
    const origins = [...new Set(requested.map((address) => new URL(address).origin))];
    expect(origins).toEqual([t.url]);
    for (const address of requested) expect(new URL(address).hostname).toBe('127.0.0.1');
    expect(requested.filter((address) => new URL(address).pathname === '/v1/pets')).toHaveLength(1);
  });
});
