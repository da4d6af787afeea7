import { serverAudits, type Audit, type AuditRequirement, type AuditResult } from 'graphql-http';
import { startTestApp, type TestApp } from '../helpers/test-app';

const LEVELS: readonly AuditRequirement[] = ['MUST', 'SHOULD', 'MAY'];

/** One HTTP exchange made by an audit, kept to explain a failure. */
interface Exchange {
  method: string;
  url: string;
  requestHeaders: Record<string, string>;
  requestBody: string | undefined;
  status: number;
  responseHeaders: Record<string, string>;
  responseBody: string;
}

let target: TestApp | undefined;
let exchanges: Exchange[] = [];

function started(): TestApp {
  if (!target) throw new Error('The test app is not started (beforeAll failed?)');
  return target;
}

/** The global fetch, with `Authorization: Bearer <apiKey>` added to every request; records each exchange. */
async function authorizedFetch(input: string | URL, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${started().apiKey}`);
  const response = await fetch(input, { ...init, headers });
  const shownHeaders = Object.fromEntries(headers);
  shownHeaders.authorization = 'Bearer <apiKey>';
  exchanges.push({
    method: init.method ?? 'GET',
    url: String(input).replace(started().url, ''),
    requestHeaders: shownHeaders,
    requestBody: typeof init.body === 'string' ? init.body : init.body == null ? undefined : '<non-string body>',
    status: response.status,
    responseHeaders: Object.fromEntries(response.headers),
    responseBody: await response.clone().text(),
  });
  return response;
}

const audits: Audit[] = serverAudits({
  url: () => `${started().url}/graphql`,
  fetchFn: authorizedFetch,
});

function levelOf(audit: Pick<Audit, 'name'>): AuditRequirement {
  const level = audit.name.split(' ', 1)[0] as AuditRequirement;
  if (!LEVELS.includes(level)) throw new Error(`Audit name without a requirement level: ${audit.name}`);
  return level;
}

function describeExchanges(): string {
  return exchanges
    .map(
      (exchange) =>
        `  request:  ${exchange.method} ${exchange.url} ${JSON.stringify(exchange.requestHeaders)}` +
        (exchange.requestBody === undefined ? ' (no body)' : ` body ${exchange.requestBody}`) +
        `\n  response: ${exchange.status} content-type ${exchange.responseHeaders['content-type'] ?? '(none)'}` +
        ` body ${exchange.responseBody || '(empty)'}`,
    )
    .join('\n');
}

async function runAudit(audit: Audit): Promise<AuditResult> {
  exchanges = [];
  return audit.fn();
}

beforeAll(async () => {
  target = await startTestApp();
});

afterAll(async () => {
  await target?.close();
});

describe('the graphql-http audit list', () => {
  test('when the audits are listed, then every id is unique and every name starts with MUST, SHOULD or MAY', () => {
    const ids = audits.map((audit) => audit.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const audit of audits) expect(LEVELS).toContain(levelOf(audit));
  });

  test('when the audits are counted, then there are the 61 docs/contract.md speaks of: 13 MUST, 23 SHOULD, 25 MAY', () => {
    const counts = Object.fromEntries(LEVELS.map((level) => [level, audits.filter((audit) => levelOf(audit) === level).length]));
    expect(counts).toEqual({ MUST: 13, SHOULD: 23, MAY: 25 });
  });
});

// Every audit, MUST, SHOULD and MAY alike, has to pass: there is no list of expected failures.
for (const level of LEVELS) {
  describe(`${level} audits`, () => {
    for (const audit of audits.filter((candidate) => levelOf(candidate) === level)) {
      test(`${audit.id} ${audit.name}: when audited, then it passes`, async () => {
        const result = await runAudit(audit);
        if (result.status !== 'ok') throw new Error(`${level} audit ${audit.id} failed: ${result.reason}\n${describeExchanges()}`);
      });
    }
  });
}
