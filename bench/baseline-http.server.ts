import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

/**
 * Baseline B0: `node:http` answering canned JSON of the same size as the service's answers,
 * with no database and no framework: the ceiling for this machine and load generator.
 *
 * Environment: PORT; API_KEY (the one key answered with 200/201, any other gets the canned
 * 401); CANNED_FILE, a JSON file `{ unauthorized, get, create, lists: { "<query string>": body } }`
 * of response bodies (strings) captured from the real service.
 */
const canned = JSON.parse(readFileSync(process.env.CANNED_FILE!, 'utf8')) as {
  unauthorized: string;
  get: string;
  create: string;
  lists: Record<string, string>;
};
const authorization = `Bearer ${process.env.API_KEY}`;

const server = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    const url = request.url ?? '';
    let status = 200;
    let body: string;
    if (request.headers.authorization !== authorization) [status, body] = [401, canned.unauthorized];
    else if (request.method === 'POST') [status, body] = [201, canned.create];
    else if (url.startsWith('/v1/pets/')) body = canned.get;
    else body = canned.lists[url.slice('/v1/pets'.length)] ?? canned.lists['?limit=20'];
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  });
});
server.keepAliveTimeout = 5000;
server.listen(Number(process.env.PORT), '127.0.0.1');
process.once('SIGTERM', () => server.close(() => process.exit(0)));
