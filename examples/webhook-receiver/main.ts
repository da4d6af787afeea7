import { createServer } from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';

/**
 * A webhook receiver of the Pet Store gateway (docs/webhooks.md "Receiving"): it verifies each delivery's signature with
 * the `standardwebhooks` library (which also refuses a timestamp more than 5 minutes off), answers 204 at once, and
 * handles each event once: a repeat of a delivery whose answer was lost carries the same `webhook-id`.
 *
 * Reads `WEBHOOK_SECRET` (the `whsec_…` that `npm run webhook -- add` printed; during a rotation, the new one or the old
 * one: both sign) and `PORT` (default 8080); prints one line per pet received.
 */

const secret = process.env.WEBHOOK_SECRET;
if (!secret) throw new Error('set WEBHOOK_SECRET to the whsec_… secret that `npm run webhook -- add` printed');
const webhook = new Webhook(secret);
const port = Number(process.env.PORT ?? 8080);

interface PetEvent {
  id: string;
  type: 'pet.created';
  pet: { id: number; name: string; categoryId: number; status: string };
}

/** Ids already handled; a real receiver keeps them in its database, in the transaction that handles the event. */
const handled = new Set<string>();

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    // The raw body, byte for byte: the signature covers it, not a re-serialisation of its JSON.
    const body = Buffer.concat(chunks).toString('utf8');
    let event: PetEvent;
    try {
      event = webhook.verify(body, request.headers as Record<string, string>) as PetEvent;
    } catch (error) {
      if (!(error instanceof WebhookVerificationError)) throw error;
      console.log(`refused: ${error.message}`);
      response.writeHead(400).end();
      return;
    }
    response.writeHead(204).end();
    if (handled.has(event.id)) return;
    handled.add(event.id);
    console.log(`${event.type} ${event.pet.id} ${event.pet.name} (${event.pet.status})`);
  });
});

server.listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}/`));
