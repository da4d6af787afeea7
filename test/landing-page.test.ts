import { createHash } from 'node:crypto';
import { request, startTestApp, type TestApp } from './helpers/test-app';

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
      links: { graphql: '/graphql', docs: '/docs', openapi: '/v1/openapi.json', health: '/healthz' },
    });
  });

  test('when a browser asks, then it gets an HTML page linking every surface, with a CSP that allows its one style and no script', async () => {
    const result = await request(t, 'GET', '/', { apiKey: null, headers: { accept: BROWSER_ACCEPT } });
    expect(result.status).toBe(200);
    expect(result.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = result.body as string;
    for (const path of ['/graphql', '/docs', '/v1/openapi.json', '/healthz']) expect(html).toContain(`<a href="${path}">`);
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

  test('when a browser follows each link, then none is missing (no 404)', async () => {
    const { body } = await request(t, 'GET', '/', { apiKey: null });
    for (const path of Object.values(body.links as Record<string, string>)) {
      const response = await fetch(t.url + path, { headers: { accept: BROWSER_ACCEPT }, redirect: 'follow' });
      expect([path, response.status]).toEqual([path, 200]);
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
