/** A listener cannot bind its port; the message names the variable that sets it. */
export class PortUnavailableError extends Error {
  override readonly name = 'PortUnavailableError';
}

/**
 * Runs `listen`; when the port is taken or not allowed, says which setting (`variable`, e.g.
 * `METRICS_PORT`) to change (docs/configuration.md "Two instances on one machine").
 * @throws PortUnavailableError on EADDRINUSE or EACCES; any other error as it is.
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
