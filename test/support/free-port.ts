import { createServer } from 'node:net';

/** Ports this process has handed out: the system may pick a port again as soon as it is released. */
const handedOut = new Set<number>();

/** A port the system picks on 127.0.0.1 (listen on port 0), released at once. */
function systemPickedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * A TCP port on 127.0.0.1 that was free a moment ago and that this process has not handed out
 * before, so the ports of one setup (a cluster's 12, a server's and its metrics') are distinct.
 * For tests and the benchmark, which start servers on ports of their own; another process may
 * take the port before it is used.
 *
 * @returns the port number.
 * @throws Error when the system offers only ports already handed out, 100 times in a row.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = await systemPickedPort();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('freePort: the system offered only ports already handed out, 100 times in a row');
}
