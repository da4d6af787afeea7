import http from 'node:http';

/** What the parent asks a receiver (IPC): how many deliveries it took so far. */
export type WebhookReceiverRequest = { type: 'count' };

/** What a receiver tells its parent (IPC): its address once listening, and its count when asked. */
export type WebhookReceiverReply = { type: 'listening'; url: string } | { type: 'count'; deliveries: number };

/**
 * A webhook receiver for the bench's production set-up (bench/README.md "Method"), run as a child process of its own
 * (`fork`), so its CPU is neither the service's nor the load generator's: on 127.0.0.1, a port of the system's choosing,
 * it reads each request's body whole and answers 204 at once, keeping only a count. Tells its parent its URL when
 * listening; answers `count` requests with the deliveries taken so far.
 */
function main(): void {
  let deliveries = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      deliveries++;
      response.writeHead(204).end();
    });
  });
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    process.send!({ type: 'listening', url: `http://127.0.0.1:${port}/webhooks` } satisfies WebhookReceiverReply);
  });
  process.on('message', (message: WebhookReceiverRequest) => {
    if (message.type === 'count') process.send!({ type: 'count', deliveries } satisfies WebhookReceiverReply);
  });
  // The parent gone (a bench that crashed), the receiver goes too.
  process.on('disconnect', () => server.close(() => process.exit(0)));
}

main();
