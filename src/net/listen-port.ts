/** Raised when a listener cannot bind its port; the message names the variable that sets it, in one line. */
export class PortUnavailableError extends Error {
  override readonly name = 'PortUnavailableError';
}

/**
 * Binds a listener and, when its port cannot be had, says which setting to change instead of
 * Node's `listen EADDRINUSE: address already in use 127.0.0.1:9464` (docs/configuration.md,
 * "Two instances on one machine").
 *
 * @param variable - the environment variable that chose the port, e.g. `PORT` or `METRICS_PORT`.
 * @param where.host - the interface, e.g. `127.0.0.1`; where.port - the TCP port.
 * @param listen - binds it, e.g. `() => app.listen({ port, host })`.
 * @throws PortUnavailableError, e.g. `METRICS_PORT is in use: 127.0.0.1:9464 …`, when the port is
 *   taken (EADDRINUSE) or not allowed to this user (EACCES); any other error as it is.
 */
export async function listenOn(variable: string, where: { host: string; port: number }, listen: () => Promise<unknown>): Promise<void> {
  try {
    await listen();
  } catch (error) {
    const address = `${where.host.includes(':') ? `[${where.host}]` : where.host}:${where.port}`;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw new PortUnavailableError(
        `${variable} is in use: ${address} is taken by another process (another instance of this server? ` +
          `give each instance its own ${variable}; docs/configuration.md "Two instances on one machine").`,
        { cause: error },
      );
    }
    if (code === 'EACCES') {
      throw new PortUnavailableError(`${variable} is not allowed: this user may not listen on ${address} (ports below 1024 need privileges).`, {
        cause: error,
      });
    }
    throw error;
  }
}
