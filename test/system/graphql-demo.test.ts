import { built, runNode } from '../helpers/processes';
import { startTestApp, type TestApp } from '../helpers/test-app';

describe("npm run demo:graphql (Node's fetch and a graphql-ws client)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  test('when run against the server, then every operation succeeds over HTTP and WebSocket', async () => {
    const result = await runNode(built('src/cli/graphql-demo.cli.js'), [], {
      cwd: process.cwd(),
      env: { API_KEY: t.apiKey, GRAPHQL_URL: `${t.url}/graphql` },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('"name": "Biscuit"');
    expect(result.stdout).toMatch(/pets\(status: pending\)\n\{\n {2}"pets": \[\n {4}\{\n {6}"id": "\d+",\n {6}"name": "Biscuit",\n {6}"status": "pending"/);
    expect(result.stdout).toMatch(/pet\(id: "\d+"\) {2}# deprecated\n\{\n {2}"pet": \{/);
    // The subscription, over WebSocket with graphql-ws, received the pet createPet stored.
    const id = /"createPet": \{\n {4}"id": "(\d+)"/.exec(result.stdout)![1];
    expect(result.stdout).toContain(
      'subscription { petCreated(status: pending) }  # over WebSocket, received after createPet\n' +
        JSON.stringify({ data: { petCreated: { id, name: 'Biscuit', categoryId: 2, status: 'pending' } } }, null, 2),
    );
  });

  test("when the key is wrong, then it exits 1 with the server's answer alone (no request dump)", async () => {
    const result = await runNode(built('src/cli/graphql-demo.cli.js'), [], {
      cwd: process.cwd(),
      env: { API_KEY: 'pst_wrong', GRAPHQL_URL: `${t.url}/graphql` },
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('demo:graphql failed: HTTP 401: Invalid or revoked API key.\n');
  });

  test('when only HOST and PORT say where the server is, then it finds it there, as the server reads them', async () => {
    const { hostname, port } = new URL(t.url);
    const result = await runNode(built('src/cli/graphql-demo.cli.js'), [], { cwd: process.cwd(), env: { API_KEY: t.apiKey, HOST: hostname, PORT: port } });
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(result.stdout).toContain('"name": "Biscuit"');
  });

  test('when asked for --help, then it says what it does, where it connects and where the key comes from', async () => {
    const result = await runNode(built('src/cli/graphql-demo.cli.js'), ['--help'], { cwd: process.cwd() });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: demo:graphql \[options\]/);
    for (const text of ['--url <url>', 'GRAPHQL_URL', 'HOST and PORT', 'API_KEY', 'data/dev-api-key']) expect(result.stdout).toContain(text);
  });
});
