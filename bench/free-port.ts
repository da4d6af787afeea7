import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago: the system picks it (listen on port 0)
 * and it is released at once. For tests and the benchmark, which start servers on ports of
 * their own; another process may take the port before it is used again.
 *
 * @returns the port number.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}
