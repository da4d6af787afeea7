import { type Server, type Socket, connect, createServer } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 between the app and a real server, for fault tests (Toxiproxy is
 * not available here): `cut` drops every connection and refuses new ones, `stall` keeps
 * connections open but lets no byte through (a black hole), `stallAt` stalls at a given
 * client message, `restore` passes traffic again.
 */
export interface TcpProxy {
  port: number;
  cut: () => void;
  stall: () => void;
  /**
   * Stalls everything from the first client chunk that contains `marker` (e.g. the text of a
   * SQL statement): that chunk reaches the server when `deliver` is true (the server runs the
   * statement, its answer never comes back), else it is dropped too.
   */
  stallAt: (marker: string, options: { deliver: boolean }) => void;
  restore: () => void;
  close: () => Promise<void>;
}

/** Starts a proxy to `target`; traffic passes until told otherwise. */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let mode: 'pass' | 'stall' | 'refuse' = 'pass';
  let trigger: { marker: Buffer; deliver: boolean } | undefined;
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server: Server = createServer((client) => {
    track(client);
    if (mode === 'refuse') return client.destroy();
    const upstream = connect(target.port, target.host);
    track(upstream);
    const forward = (from: Socket, to: Socket, fromClient: boolean) => {
      from.on('data', (chunk: Buffer) => {
        if (fromClient && mode === 'pass' && trigger && chunk.includes(trigger.marker)) {
          if (trigger.deliver) to.write(chunk);
          mode = 'stall';
          trigger = undefined;
          return;
        }
        if (mode === 'pass') to.write(chunk);
      });
      from.on('close', () => to.destroy());
    };
    forward(client, upstream, true);
    forward(upstream, client, false);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    cut: () => {
      mode = 'refuse';
      for (const socket of sockets) socket.destroy();
    },
    stall: () => {
      mode = 'stall';
    },
    stallAt: (marker, { deliver }) => {
      trigger = { marker: Buffer.from(marker), deliver };
    },
    restore: () => {
      mode = 'pass';
      trigger = undefined;
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
