import { createHash } from 'node:crypto';
import WebSocket from 'ws';
import { request, startTestApp, type TestApp } from '../helpers/test-app';

/** What Chromium and Firefox send for a page. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

let t: TestApp;
beforeAll(async () => {
  // One request per minute for an address without a key: the landing page must not count.
  t = await startTestApp({ env: { RATE_LIMIT_UNAUTHENTICATED_MAX: '1' } });
});
afterAll(() => t.close());

describe('GET / (the landing page, docs/explorers.md)', () => {
  test.each([
    ['no Accept', undefined],
    ['a bare wildcard (curl, fetch)', '*/*'],
    ['application/json', 'application/json'],
  ])('when a client sends %s, then it gets JSON links to every surface, with no key', async (_case, accept) => {
    const result = await request(t, 'GET', '/', { apiKey: null, headers: accept ? { accept } : {} });
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toMatch(/^application\/json/);
    expect(result.headers.get('vary')).toMatch(/accept/i);
    expect(result.body).toEqual({
      name: 'Pet Store gateway',
      links: {
        graphql: '/graphql',
        rest: '/v1/pets',
        docs: '/docs',
        openapi: '/v1/openapi.json',
        health: '/healthz',
        subscriptions: `ws://${new URL(t.url).host}/graphql`,
      },
    });
  });

  test('when a browser asks, then it gets an HTML page linking every surface, with a CSP that allows its one style and no script', async () => {
    const result = await request(t, 'GET', '/', { apiKey: null, headers: { accept: BROWSER_ACCEPT } });
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = result.body as string;
    for (const path of ['/graphql', '/v1/pets', '/docs', '/v1/openapi.json', '/healthz']) expect(html).toContain(`<a href="${path}">`);
    expect(html).not.toMatch(/<script|\son[a-z]+=|style="/i);
    const csp = result.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toMatch(/script-src|unsafe-inline/);
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map(([, style]) => style);
    expect(styles).toHaveLength(1);
    expect(csp).toContain(`style-src 'sha256-${createHash('sha256').update(styles[0]).digest('base64')}'`);
    expect(result.headers.get('x-content-type-options')).toBe('nosniff');
    expect(result.headers.get('x-frame-options')).toBe('DENY');
  });

  test('when a browser follows each link, then none is missing (no 404); the REST one asks for the key, and the WebSocket one upgrades', async () => {
    const { body } = await request(t, 'GET', '/', { apiKey: null });
    const { subscriptions, ...pages } = body.links as Record<string, string>;
    for (const path of Object.values(pages)) {
      const response = await fetch(t.url + path, { headers: { accept: BROWSER_ACCEPT }, redirect: 'follow' });
      expect([path, response.status]).toEqual([path, path === '/v1/pets' ? 401 : 200]);
    }
    const socket = new WebSocket(subscriptions, 'graphql-transport-ws');
    await new Promise<void>((resolve, reject) => socket.once('open', () => resolve()).once('error', reject));
    socket.close();
  });

  test('when the request came through a TLS proxy that TRUST_PROXY trusts, then the WebSocket URL is wss:// on the forwarded host', async () => {
    const proxied = await startTestApp({ createKey: false, env: { TRUST_PROXY: '127.0.0.1' } });
    try {
      const result = await request(proxied, 'GET', '/', { apiKey: null, headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'pets.example' } });
      expect(result.body.links.subscriptions).toBe('wss://pets.example/graphql');
    } finally {
      await proxied.close();
    }
  });

  test('when it is asked for many times without a key, then the rate limit never answers (it is outside the guard)', async () => {
    const statuses = await Promise.all(Array.from({ length: 5 }, () => fetch(`${t.url}/`).then((response) => response.status)));
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
  });

  test('when another method is used, then 405 with Allow', async () => {
    const result = await request(t, 'POST', '/', { apiKey: null, body: {} });
    expect(result.status).toBe(405);
    expect(result.headers.get('allow')).toBe('GET, HEAD');
    expect(result.body.code).toBe('METHOD_NOT_ALLOWED');
  });

  test('when HEAD is sent, then the same headers and no body', async () => {
    const response = await fetch(`${t.url}/`, { method: 'HEAD', headers: { accept: BROWSER_ACCEPT } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await response.text()).toBe('');
  });

  test('when the OpenAPI document is read, then / is not in it (not part of /v1)', async () => {
    const { body } = await request(t, 'GET', '/v1/openapi.json', { apiKey: null });
    expect(Object.keys(body.paths)).not.toContain('/');
  });
});

describe("the playground's key hint (docs/explorers.md)", () => {
  const page = async (target: TestApp) => (await request(target, 'GET', '/graphql', { apiKey: null, headers: { accept: BROWSER_ACCEPT } })).body as string;

  test('when the server runs on the embedded database, then the key form points at the development key file, which the server wrote', async () => {
    const html = await page(t);
    expect(html).toContain('No key yet? <code>cat data/dev-api-key</code>');
    expect(html).toContain('data-key-command="cat data/dev-api-key"');
    expect(html).not.toContain('npm run apikey');
  });

  test('when it runs in production (no development key), then the key form points at the apikey CLI', async () => {
    const production = await startTestApp({ createKey: false, env: { NODE_ENV: 'production' } });
    try {
      expect(await page(production)).toContain('No key yet? <code>npm run apikey -- create &lt;name&gt;</code>');
    } finally {
      await production.close();
    }
  });
});
