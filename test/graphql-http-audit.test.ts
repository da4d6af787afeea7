import { serverAudits, type Audit, type AuditRequirement, type AuditResult } from 'graphql-http';
import { startTestApp, type TestApp } from './helpers/test-app';

/**
 * SHOULD and MAY audits of the GraphQL over HTTP spec that /graphql is known to fail, by
 * audit id, with the reason. Each listed audit is asserted to still fail, so when one starts
 * passing its test fails and asks for the entry to be removed. A MUST can never be listed.
 */
export const KNOWN_SHOULD_FAILURES: Record<string /* audit id */, string /* reason */> = {
  // Apollo Server answers GraphQL request errors with HTTP 400 whatever the Accept header
  // (README: "Parse, validation and variable errors are HTTP 400"); the spec's legacy
  // application/json rules ask for 200 with the errors in the body.
  '572B':
    'A parse failure ({"query":"{"}) with Accept: application/json is 400 GRAPHQL_PARSE_FAILED, not 200: Apollo uses 400 for parse errors whatever the Accept header.',
  FDE2: 'The audit document "{ 8f31403dfe404bccbb0e835f2629c6a7 }" does not even parse (graphql-js: "Invalid number"), so it is 400 GRAPHQL_PARSE_FAILED; a real validation failure ({ noSuchField }) is 400 GRAPHQL_VALIDATION_FAILED too, not 200.',
  '7B9B':
    'The audit document fails validation first ("Variable $id is never used"), 400 GRAPHQL_VALIDATION_FAILED; a real variable coercion failure ($limit: Int! = null) is 400 BAD_USER_INPUT too, not 200.',
  // Apollo's CSRF prevention (on by default) refuses a GET that carries neither a Content-Type
  // nor an apollo-require-preflight / x-apollo-operation-name header; the audit's GETs carry none.
  // With `apollo-require-preflight: 1` the same GETs answer 200 (README: GET works for queries).
  '5A70': 'GET /graphql?query={ __typename } without Content-Type or apollo-require-preflight is 400 BAD_REQUEST from Apollo CSRF prevention.',
  D6D5: 'GET with query and URL-encoded variables is 400 BAD_REQUEST from Apollo CSRF prevention (no preflight header).',
  '6A70': 'GET with query and URL-encoded variables is 400 BAD_REQUEST from Apollo CSRF prevention (no preflight header).',
};

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

  test('when KNOWN_SHOULD_FAILURES is read, then each id names an existing SHOULD or MAY audit', () => {
    const levels = new Map(audits.map((audit) => [audit.id, levelOf(audit)]));
    for (const [id, reason] of Object.entries(KNOWN_SHOULD_FAILURES)) {
      expect({ id, level: levels.get(id) }).toEqual({ id, level: expect.stringMatching(/^(SHOULD|MAY)$/) });
      expect(reason.trim()).not.toBe('');
    }
  });
});

for (const level of LEVELS) {
  describe(`${level} audits`, () => {
    for (const audit of audits.filter((candidate) => levelOf(candidate) === level)) {
      const knownReason = level === 'MUST' ? undefined : KNOWN_SHOULD_FAILURES[audit.id];

      if (knownReason === undefined) {
        test(`${audit.id} ${audit.name}: when audited, then it passes`, async () => {
          const result = await runAudit(audit);
          if (result.status !== 'ok') {
            const advice =
              level === 'MUST'
                ? 'A MUST of the GraphQL over HTTP spec: the server has to be fixed.'
                : 'Fix the server, or list this id in KNOWN_SHOULD_FAILURES with the reason.';
            throw new Error(`${level} audit ${audit.id} failed: ${result.reason}\n${describeExchanges()}\n${advice}`);
          }
        });
      } else {
        test(`${audit.id} ${audit.name}: when audited, then it still fails as listed in KNOWN_SHOULD_FAILURES`, async () => {
          const result = await runAudit(audit);
          if (result.status === 'ok') {
            throw new Error(
              `${level} audit ${audit.id} now passes: remove it from KNOWN_SHOULD_FAILURES ` + `(listed because: ${knownReason}).\n${describeExchanges()}`,
            );
          }
          // A server error is never the known reason: it would hide a regression behind the list.
          if (exchanges.some((exchange) => exchange.status >= 500)) {
            throw new Error(`${level} audit ${audit.id} fails with a server error, not for the listed reason ` + `(${knownReason}).\n${describeExchanges()}`);
          }
        });
      }
    }
  });
}
