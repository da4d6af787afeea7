import { type IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { AppError, toAppError } from '../errors/error-catalogue';
import { writeRawHttpError } from './raw-http-error';

/** Where WebSocket upgrades go, and how many an address may hold before it authenticates. */
export interface UpgradeRouterOptions {
  path: string;
  /** Named to a WebSocket at another path. */
  service: string;
  clientAddressOf: (request: IncomingMessage) => string;
  /** Unauthenticated sockets of one address; the next upgrade is 429. */
  maxPendingPerAddress: number;
  /** Also the 429's Retry-After. */
  pendingMs: number;
  closeHandshakeMs: number;
  /**
   * Admits the upgrade before any WebSocket is made (its key, when the request carries one); a thrown AppError is the
   * answer, in the Error shape.
   */
  admit: (request: IncomingMessage, socket: Duplex) => Promise<void>;
  accept: (request: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** At shutdown; upgraded sockets still open after it are destroyed. */
  close: () => Promise<void>;
  /** Where the router registers its close, run as the listener stops accepting (ServiceState.onStopAccepting). */
  onStopAccepting: (close: () => Promise<void>) => void;
}

/** Refuses an upgrade in the Error shape; the socket is cut after `closeHandshakeMs` so a refused peer holds nothing. */
export function refuseUpgrade(request: IncomingMessage, socket: Duplex, error: AppError, closeHandshakeMs: number): void {
  const cut = setTimeout(() => socket.destroy(), closeHandshakeMs);
  cut.unref();
  socket.once('close', () => clearTimeout(cut));
  socket.on('error', () => socket.destroy());
  socket.once('end', () => socket.destroy());
  writeRawHttpError(socket, error, request.method === 'HEAD');
}

/**
 * Routes the HTTP server's `upgrade` requests (docs/subscriptions.md); another protocol (`h2c`) is
 * served as plain HTTP/1.1. `authenticated` gives an upgrade's pending place back.
 */
export function routeUpgrades(app: FastifyInstance, options: UpgradeRouterOptions): { authenticated: (request: IncomingMessage) => void } {
  const pendingPerAddress = new Map<string, number>();
  const releasePending = new WeakMap<IncomingMessage, () => void>();
  const holdPending = (request: IncomingMessage, socket: Duplex, ip: string) => {
    pendingPerAddress.set(ip, (pendingPerAddress.get(ip) ?? 0) + 1);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      const left = (pendingPerAddress.get(ip) ?? 1) - 1;
      if (left > 0) pendingPerAddress.set(ip, left);
      else pendingPerAddress.delete(ip);
    };
    releasePending.set(request, release);
    socket.once('close', release);
  };
  const refuse = (request: IncomingMessage, socket: Duplex, error: AppError) => refuseUpgrade(request, socket, error, options.closeHandshakeMs);

  // Node's HTTP server stops tracking the sockets it hands over: shutdown must.
  const upgraded = new Set<Duplex>();
  let accepting = true;
  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    const path = (request.url ?? '').split('?')[0];
    const ip = options.clientAddressOf(request);
    if (request.headers.upgrade?.toLowerCase() !== 'websocket') {
      // With an `upgrade` listener Node does not serve such a request as plain HTTP/1.1 itself.
      const response = new ServerResponse(request);
      response.shouldKeepAlive = false;
      response.assignSocket(socket as Socket);
      // Node's server closes the sockets of its own responses; this one is ours to close.
      response.once('finish', () => socket.end());
      socket.once('end', () => socket.destroy());
      app.routing(request, response);
    } else if (path !== options.path) {
      refuse(request, socket, new AppError('NOT_FOUND', `No WebSocket at ${path}: ${options.service} are at ${options.path}.`));
    } else if (!accepting) {
      refuse(request, socket, new AppError('SERVICE_UNAVAILABLE', 'Shutting down.'));
    } else if ((pendingPerAddress.get(ip) ?? 0) >= options.maxPendingPerAddress) {
      const message =
        `Too many WebSockets from this address awaiting connection_init: at most ` + `${options.maxPendingPerAddress}; send connection_init on those first.`;
      refuse(request, socket, new AppError('TOO_MANY_REQUESTS', message, { 'Retry-After': String(options.pendingMs / 1000) }));
    } else {
      holdPending(request, socket, ip);
      options.admit(request, socket).then(
        () => {
          if (!socket.destroyed) options.accept(request, socket, head);
        },
        (error: unknown) => {
          const { appError, unexpected } = toAppError(error);
          if (unexpected) app.log.error({ err: error }, 'unexpected error admitting a WebSocket upgrade');
          refuse(request, socket, appError);
        },
      );
    }
  });

  let closing: Promise<void> | undefined;
  options.onStopAccepting(() => {
    closing ??= (async () => {
      accepting = false;
      await options.close();
      // Such as a refused upgrade whose peer keeps it half open.
      for (const socket of upgraded) socket.destroy();
    })();
    return closing;
  });
  return { authenticated: (request) => releasePending.get(request)?.() };
}
